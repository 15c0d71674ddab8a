#ifndef EDGEINGEST_CSQLITE_SHIM_H
#define EDGEINGEST_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift
/// cannot import; the queue binds blobs it keeps alive, so it uses STATIC.
static inline void (*edgeingest_sqlite_static(void))(void *) { return SQLITE_STATIC; }
static inline void (*edgeingest_sqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }

/// Turns off SQLite's memory statistics, which take a process-wide mutex
/// around every allocation (sqlite3_config is variadic: Swift cannot call
/// it). Only before SQLite initializes; later it returns SQLITE_MISUSE and
/// changes nothing.
static inline int edgeingest_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

#endif
