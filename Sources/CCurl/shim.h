// libcurl (Debian 12: libcurl4 at run time, libcurl4-openssl-dev to build), loaded with dlopen on first
// use instead of linked: libcurl pulls in ~30 shared libraries (TLS, Kerberos, LDAP, SSH…) whose
// symbol resolution would otherwise cost every crashsym process, `lookup` included, several
// milliseconds at start-up. Only `upload` loads it.
//
// The libcurl functions crashsym calls are declared by curl.h under other names (the #defines below)
// and re-declared here as static inline functions of the real names, which call through a table filled
// by dlsym. Swift calls them by their usual names. curl_easy_setopt/getinfo are variadic and not
// callable from Swift: each option type gets a static inline wrapper.
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#define CURL_DISABLE_TYPECHECK 1
#define curl_global_init crashsym_declared_curl_global_init
#define curl_easy_init crashsym_declared_curl_easy_init
#define curl_easy_cleanup crashsym_declared_curl_easy_cleanup
#define curl_easy_perform crashsym_declared_curl_easy_perform
#define curl_easy_reset crashsym_declared_curl_easy_reset
#define curl_easy_strerror crashsym_declared_curl_easy_strerror
#define curl_slist_append crashsym_declared_curl_slist_append
#define curl_slist_free_all crashsym_declared_curl_slist_free_all
#define curl_easy_setopt crashsym_declared_curl_easy_setopt
#define curl_easy_getinfo crashsym_declared_curl_easy_getinfo
#include <curl/curl.h>
#undef curl_global_init
#undef curl_easy_init
#undef curl_easy_cleanup
#undef curl_easy_perform
#undef curl_easy_reset
#undef curl_easy_strerror
#undef curl_slist_append
#undef curl_slist_free_all
#undef curl_easy_setopt
#undef curl_easy_getinfo

/// The libcurl entry points crashsym uses, resolved once.
typedef struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    CURLcode (*easy_perform)(CURL *);
    void (*easy_reset)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    /// Why loading failed (NULL when it worked).
    const char *error;
} crashsym_curl_api_t;

// Function-local statics: Swift's importer emits the bodies of inline functions it calls, with their
// local statics, but not file-scope static variables of a header.
static inline crashsym_curl_api_t *crashsym_curl_storage(void) {
    static crashsym_curl_api_t table;
    return &table;
}
#define crashsym_curl_table (*crashsym_curl_storage())

static inline void crashsym_curl_load_once(void) {
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) library = dlopen("libcurl.so", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        crashsym_curl_table.error = "libcurl.so.4 not found (install it: apt-get install libcurl4)";
        return;
    }
#define CRASHSYM_CURL_SYMBOL(field, name)                                                           \
    *(void **)(&crashsym_curl_table.field) = dlsym(library, name);                                  \
    if (crashsym_curl_table.field == NULL) {                                                        \
        crashsym_curl_table.error = "libcurl.so.4 lacks " name;                                     \
        return;                                                                                     \
    }
    CRASHSYM_CURL_SYMBOL(global_init, "curl_global_init")
    CRASHSYM_CURL_SYMBOL(easy_init, "curl_easy_init")
    CRASHSYM_CURL_SYMBOL(easy_cleanup, "curl_easy_cleanup")
    CRASHSYM_CURL_SYMBOL(easy_perform, "curl_easy_perform")
    CRASHSYM_CURL_SYMBOL(easy_reset, "curl_easy_reset")
    CRASHSYM_CURL_SYMBOL(easy_strerror, "curl_easy_strerror")
    CRASHSYM_CURL_SYMBOL(slist_append, "curl_slist_append")
    CRASHSYM_CURL_SYMBOL(slist_free_all, "curl_slist_free_all")
    CRASHSYM_CURL_SYMBOL(easy_setopt, "curl_easy_setopt")
    CRASHSYM_CURL_SYMBOL(easy_getinfo, "curl_easy_getinfo")
#undef CRASHSYM_CURL_SYMBOL
}

/// Loads libcurl once; NULL when it worked, else why not.
static inline const char *crashsym_curl_load_error(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, crashsym_curl_load_once);
    return crashsym_curl_table.error;
}

// Every call below happens after curl_global_init, which loads the library (and fails cleanly when
// it cannot be loaded); the rest assume a loaded table.
static inline CURLcode curl_global_init(long flags) {
    if (crashsym_curl_load_error() != NULL) return CURLE_FAILED_INIT;
    return crashsym_curl_table.global_init(flags);
}
static inline CURL *curl_easy_init(void) {
    if (crashsym_curl_load_error() != NULL) return NULL;
    return crashsym_curl_table.easy_init();
}
static inline void curl_easy_cleanup(CURL *handle) { crashsym_curl_table.easy_cleanup(handle); }
static inline CURLcode curl_easy_perform(CURL *handle) { return crashsym_curl_table.easy_perform(handle); }
static inline void curl_easy_reset(CURL *handle) { crashsym_curl_table.easy_reset(handle); }
static inline const char *curl_easy_strerror(CURLcode code) {
    if (crashsym_curl_load_error() != NULL) return crashsym_curl_table.error;
    return crashsym_curl_table.easy_strerror(code);
}
static inline struct curl_slist *curl_slist_append(struct curl_slist *list, const char *text) {
    if (crashsym_curl_load_error() != NULL) return NULL;
    return crashsym_curl_table.slist_append(list, text);
}
static inline void curl_slist_free_all(struct curl_slist *list) {
    if (list != NULL) crashsym_curl_table.slist_free_all(list);
}

static inline CURLcode crashsym_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return crashsym_curl_table.easy_setopt(handle, option, value);
}
static inline CURLcode crashsym_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return crashsym_curl_table.easy_setopt(handle, option, value);
}
static inline CURLcode crashsym_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return crashsym_curl_table.easy_setopt(handle, option, value);
}
static inline CURLcode crashsym_curl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return crashsym_curl_table.easy_setopt(handle, option, value);
}
static inline CURLcode crashsym_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return crashsym_curl_table.easy_getinfo(handle, info, value);
}
static inline CURLcode crashsym_curl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return crashsym_curl_table.easy_getinfo(handle, info, value);
}

// Callbacks: a function pointer passed through `...` must keep its exact type, so each kind gets its
// own wrapper instead of going through crashsym_curl_setopt_pointer.
static inline CURLcode crashsym_curl_set_read_function(CURL *handle, curl_read_callback callback) {
    return crashsym_curl_table.easy_setopt(handle, CURLOPT_READFUNCTION, callback);
}
static inline CURLcode crashsym_curl_set_seek_function(CURL *handle, curl_seek_callback callback) {
    return crashsym_curl_table.easy_setopt(handle, CURLOPT_SEEKFUNCTION, callback);
}
static inline CURLcode crashsym_curl_set_write_function(CURL *handle, curl_write_callback callback) {
    return crashsym_curl_table.easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}
static inline CURLcode crashsym_curl_set_xferinfo_function(CURL *handle, curl_xferinfo_callback callback) {
    return crashsym_curl_table.easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}
static inline CURLcode crashsym_curl_set_header_function(CURL *handle, curl_write_callback callback) {
    return crashsym_curl_table.easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}
