/* The RSS floor of any agent built on Debian's shared libraries: a C program
 * that links exactly what ingestd links (libcurl, libsqlite3, libsystemd),
 * initialises libcurl, opens an SQLite WAL file, sends READY=1 and makes one
 * HTTP request — nothing else — and prints VmRSS after each step, then its
 * idle memory as /proc/self/smaps_rollup counts it.
 *
 * Built with -DFLOOR_NO_MAIN it is the same steps for swift-floor.swift to
 * call (floor_steps): the floor of a Swift program built as ingestd is.
 *
 *   bench/rss-floor.sh            (builds and runs both; docs/BENCHMARKS.md)
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

/* One line: RSS, PSS, private (clean + dirty) and anonymous memory, MiB. */
void floor_rollup(const char *who) {
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256], name[64];
    long kb, rss = 0, pss = 0, private = 0, anonymous = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "%63s %ld", name, &kb) != 2) continue;
        if (!strcmp(name, "Rss:")) rss = kb;
        else if (!strcmp(name, "Pss:")) pss = kb;
        else if (!strcmp(name, "Private_Clean:") || !strcmp(name, "Private_Dirty:")) private += kb;
        else if (!strcmp(name, "Anonymous:")) anonymous = kb;
    }
    if (f) fclose(f);
    printf("%-34s RSS %.1f MiB, PSS %.1f, private %.1f, anonymous %.1f\n", who, rss / 1024.0, pss / 1024.0,
           private / 1024.0, anonymous / 1024.0);
}

static size_t discard(char *p, size_t s, size_t n, void *u) { (void)p; (void)u; return s * n; }

int floor_steps(const char *url, const char *db_path) {
    rss("loaded (before the first call)");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    rss("curl_global_init");
    CURL *h = curl_easy_init();
    sqlite3 *db;
    sqlite3_open(db_path, &db);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE IF NOT EXISTS t(a); INSERT INTO t VALUES(1);", 0, 0, 0);
    rss("+ SQLite WAL file, one insert");
    sd_notify(0, "READY=1");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_perform(h);
    rss("+ READY=1, one HTTP request");
    fflush(stdout);
    return 0;
}

#ifndef FLOOR_NO_MAIN
int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: floor URL DB_PATH\n"); return 2; }
    floor_steps(argv[1], argv[2]);
    floor_rollup("idle (C)");
    return 0;
}
#endif
