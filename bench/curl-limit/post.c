// The raw libcurl limit of this machine: one reused easy handle posting the
// same body back to back to a receiver (keep-alive), nothing else. Bounds
// what any uploader built on libcurl can do here against that receiver, so
// bench/upload.sh reports the agent's drain as a share of it.
//
//   cc -O2 -o post post.c -lcurl && ./post URL BODY_FILE REQUESTS
//
// Prints "<requests>/s <seconds>"; exits 1 if any request failed or was not 2xx.
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static size_t discard(char *p, size_t s, size_t n, void *u) { (void)p; (void)u; return s * n; }

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: post URL BODY_FILE REQUESTS\n"); return 2; }
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 2; }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    char *body = malloc((size_t)size);
    if (!body || fread(body, 1, (size_t)size, f) != (size_t)size) { perror("read"); return 2; }
    fclose(f);
    long requests = atol(argv[3]);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *h = curl_easy_init();
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/x-ndjson");
    curl_easy_setopt(h, CURLOPT_URL, argv[1]);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, size);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long i = 0; i < requests; i++) {
        CURLcode rc = curl_easy_perform(h);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        if (rc != CURLE_OK || status / 100 != 2) {
            fprintf(stderr, "request %ld: %s, HTTP %ld\n", i, curl_easy_strerror(rc), status);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    printf("%.0f %.3f\n", (double)requests / seconds, seconds);
    return 0;
}
