#ifndef EDGEINGEST_CSQLITE_SHIM_H
#define EDGEINGEST_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift
/// cannot import; the queue binds blobs it keeps alive, so it uses STATIC.
static inline void (*edgeingest_sqlite_static(void))(void *) { return SQLITE_STATIC; }
static inline void (*edgeingest_sqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }

#endif
