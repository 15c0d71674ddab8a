#ifndef EDGEINGEST_CSYSTEMD_SHIM_H
#define EDGEINGEST_CSYSTEMD_SHIM_H
/* Our handler sends its own CODE_FILE/LINE/FUNC: without this, sd-journal.h
   makes sd_journal_sendv a macro that adds this header's location too. */
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <sys/uio.h>

/// sd_journal_send is variadic; the journal log handler builds an iovec
/// array and calls sd_journal_sendv, which is not. sd_notify is not variadic.
static inline int edgeingest_sd_journal_sendv(const struct iovec *iov, int n) { return sd_journal_sendv(iov, n); }

#endif
