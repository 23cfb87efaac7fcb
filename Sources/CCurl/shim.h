#ifndef PORTARIA_CCURL_SHIM_H
#define PORTARIA_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic: one typed wrapper per kind. */
static inline CURLcode portaria_curl_set_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode portaria_curl_set_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode portaria_curl_set_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode portaria_curl_set_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode portaria_curl_set_write_function(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, f);
}
static inline CURLcode portaria_curl_set_header_function(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, f);
}
static inline CURLcode portaria_curl_set_post_body(CURL *h, const char *data, long length) {
    CURLcode c = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, length);
    if (c != CURLE_OK) return c;
    return curl_easy_setopt(h, CURLOPT_COPYPOSTFIELDS, data);
}
static inline long portaria_curl_response_code(CURL *h) {
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    return code;
}
/* The multi interface (HTTP/2 multiplexing for APNs and FCM). */
static inline CURLMcode portaria_curlm_set_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
/* New connections this transfer had to open (0 when it rode an existing one). */
static inline long portaria_curl_num_connects(CURL *h) {
    long n = 0;
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &n);
    return n;
}
#endif
