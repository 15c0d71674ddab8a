// nofsync: the negative control of scripts/test-powercut-vm.sh. Preloaded
// into the agent inside the VM, it makes fsync, fdatasync, sync_file_range
// and syncfs return success without syncing, as a build that skipped its
// syncs would: commits are confirmed while their pages are still only in
// the guest's page cache, and a power cut must then lose confirmed readings
// (the harness has to catch that, or it proves nothing).
//
// Build: cc -shared -fPIC -O1 -o nofsync.so nofsync.c
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

int fsync(int fd) { (void)fd; return 0; }
int fdatasync(int fd) { (void)fd; return 0; }
int syncfs(int fd) { (void)fd; return 0; }
int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags) {
    (void)fd; (void)offset; (void)nbytes; (void)flags;
    return 0;
}
