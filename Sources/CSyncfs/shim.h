// syncfs(2): <unistd.h> declares it only under _GNU_SOURCE, which Swift's Glibc module is built
// without. The agent's queue makes a batch of files durable with one call instead of one fsync each.
int syncfs(int fd);
