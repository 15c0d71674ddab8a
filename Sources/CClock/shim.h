#ifndef EDGEINGEST_CCLOCK_SHIM_H
#define EDGEINGEST_CCLOCK_SHIM_H
#include <sys/timex.h>

/// The kernel's NTP status, read only (modes 0 needs no privilege):
/// 1 synchronised, 0 not (TIME_ERROR or STA_UNSYNC), -1 when the call
/// was refused (a seccomp filter such as systemd's ProtectClock=).
static inline int edgeingest_clock_synchronised(void) {
    struct timex status = {0};
    int state = adjtimex(&status);
    if (state < 0) return -1;
    return (state == TIME_ERROR || (status.status & STA_UNSYNC)) ? 0 : 1;
}

#endif
