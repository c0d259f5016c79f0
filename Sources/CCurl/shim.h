// libcurl (Debian 12: libcurl4-openssl-dev). curl_easy_setopt/getinfo are variadic and not callable
// from Swift: each option type gets a static inline wrapper here.
#include <curl/curl.h>

static inline CURLcode crashsym_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode crashsym_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode crashsym_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode crashsym_curl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode crashsym_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode crashsym_curl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

// Callbacks: a function pointer passed through `...` must keep its exact type, so each kind gets its
// own wrapper instead of going through crashsym_curl_setopt_pointer.
static inline CURLcode crashsym_curl_set_read_function(CURL *handle, curl_read_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_READFUNCTION, callback);
}
static inline CURLcode crashsym_curl_set_seek_function(CURL *handle, curl_seek_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, callback);
}
static inline CURLcode crashsym_curl_set_write_function(CURL *handle, curl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}
static inline CURLcode crashsym_curl_set_xferinfo_function(CURL *handle, curl_xferinfo_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}
