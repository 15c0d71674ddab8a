#include <unistd.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <stdlib.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){
  const char*path=argv[1]; int perbatch=atoi(argv[2]); const char*sync=argv[3];
  unlink(path); char w[512]; snprintf(w,512,"%s-wal",path); unlink(w);
  sqlite3*db; sqlite3_open(path,&db);
  sqlite3_exec(db,"PRAGMA journal_mode=WAL",0,0,0);
  char s[100]; snprintf(s,100,"PRAGMA synchronous=%s",sync); sqlite3_exec(db,s,0,0,0);
  sqlite3_exec(db,"CREATE TABLE q(id INTEGER PRIMARY KEY, t TEXT, v INT, at INT, n INT, ids BLOB, p BLOB)",0,0,0);
  const char*rec="{\"_id\":\"65f1c2a9e1b2c3d4e5f60718\",\"deviceId\":\"WX1278UIT\",\"temperatureInFahrenheit\":66.7,\"barometricPressureInHg\":29.65,\"windSpeedInMph\":2}\n";
  int rl=strlen(rec); int N=1000000,B=1000;
  char*blob=malloc(rl*B); for(int i=0;i<B;i++)memcpy(blob+i*rl,rec,rl);
  char ids[12*1000]; memset(ids,7,sizeof ids);
  sqlite3_stmt*st; sqlite3_prepare_v2(db,"INSERT INTO q(t,v,at,n,ids,p) VALUES('WeatherSensor',1,?,?,?,?)",-1,&st,0);
  double t0=now();
  for(int b=0;b<N/B;b++){
    sqlite3_exec(db,"BEGIN",0,0,0);
    if(perbatch){ sqlite3_bind_int64(st,1,b); sqlite3_bind_int(st,2,B); sqlite3_bind_blob(st,3,ids,12*B,SQLITE_STATIC); sqlite3_bind_blob(st,4,blob,rl*B,SQLITE_STATIC); sqlite3_step(st); sqlite3_reset(st);}
    else for(int i=0;i<B;i++){ sqlite3_bind_int64(st,1,b); sqlite3_bind_int(st,2,1); sqlite3_bind_blob(st,3,ids,12,SQLITE_STATIC); sqlite3_bind_blob(st,4,rec,rl,SQLITE_STATIC); sqlite3_step(st); sqlite3_reset(st);}
    sqlite3_exec(db,"COMMIT",0,0,0);
  }
  double t1=now();
  sqlite3_stmt*sel; sqlite3_prepare_v2(db, perbatch? "SELECT id,p FROM q ORDER BY id LIMIT 1":"SELECT id,p FROM q ORDER BY id LIMIT 1000",-1,&sel,0);
  sqlite3_stmt*del; sqlite3_prepare_v2(db,"DELETE FROM q WHERE id<=?",-1,&del,0);
  long got=0; 
  for(;;){ long last=-1; int n=0; size_t bytes=0;
    while(sqlite3_step(sel)==SQLITE_ROW){ last=sqlite3_column_int64(sel,0); bytes+=sqlite3_column_bytes(sel,1); n++;}
    sqlite3_reset(sel); if(last<0)break;
    sqlite3_exec(db,"BEGIN",0,0,0); sqlite3_bind_int64(del,1,last); sqlite3_step(del); sqlite3_reset(del); sqlite3_exec(db,"COMMIT",0,0,0);
    got+= perbatch? B : n; }
  double t2=now();
  printf("perbatch=%d sync=%s append %.0f/s drain %.0f/s (%ld)\n",perbatch,sync,N/(t1-t0),got/(t2-t1),got);
}
