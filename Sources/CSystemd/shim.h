#ifndef EDGEINGEST_CSYSTEMD_SHIM_H
#define EDGEINGEST_CSYSTEMD_SHIM_H
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <sys/uio.h>

/// sd_journal_send is variadic; the journal log handler builds an iovec
/// array and calls sd_journal_sendv, which is not. sd_notify is not variadic.
static inline int edgeingest_sd_journal_sendv(const struct iovec *iov, int n) { return sd_journal_sendv(iov, n); }

#endif
