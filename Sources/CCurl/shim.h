#ifndef EDGEINGEST_CCURL_SHIM_H
#define EDGEINGEST_CCURL_SHIM_H
#include <curl/curl.h>

/// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot
/// call; these typed wrappers are the only way the package reaches them.
static inline CURLcode edgeingest_curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode edgeingest_curl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode edgeingest_curl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode edgeingest_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode edgeingest_curl_setopt_offset(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
typedef size_t (*edgeingest_curl_write_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);
static inline CURLcode edgeingest_curl_setopt_write_function(CURL *h, CURLoption o, edgeingest_curl_write_callback v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode edgeingest_curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }

#endif
