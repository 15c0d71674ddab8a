/* The RSS floor of any agent built on Debian's shared libraries: a C program
 * that links exactly what ingestd links (libcurl, libsqlite3, libsystemd),
 * initialises libcurl, opens an SQLite WAL file, sends READY=1 and makes one
 * HTTP request — nothing else — and prints VmRSS after each step.
 *
 *   bench/rss-floor.sh            (builds and runs it; docs/BENCHMARKS.md)
 */
#include <curl/curl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>

static void rss(const char *step) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) printf("%-34s %s", step, line + 6);
    if (f) fclose(f);
}

static size_t discard(char *p, size_t s, size_t n, void *u) { (void)p; (void)u; return s * n; }

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: floor URL DB_PATH\n"); return 2; }
    rss("loaded (before main's first call)");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    rss("curl_global_init");
    CURL *h = curl_easy_init();
    sqlite3 *db;
    sqlite3_open(argv[2], &db);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE IF NOT EXISTS t(a); INSERT INTO t VALUES(1);", 0, 0, 0);
    rss("+ SQLite WAL file, one insert");
    sd_notify(0, "READY=1");
    curl_easy_setopt(h, CURLOPT_URL, argv[1]);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_perform(h);
    rss("+ READY=1, one HTTP request");
    return 0;
}
