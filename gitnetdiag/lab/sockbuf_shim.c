/* gitnetdiag lab, forward-proxy-buffer fault: give every TCP socket of a program a small
 * FIXED receive and send buffer.
 *
 * Loaded with LD_PRELOAD into the lab's forward proxy (tinyproxy, which has no buffer
 * setting of its own). Every stream socket it creates (its listening socket, before the
 * SYN of any client: the window scale it offers follows the buffer) and every socket it
 * accepts gets SO_RCVBUF and SO_SNDBUF of GND_SOCKET_BUFFER bytes. Linux doubles the value
 * for its bookkeeping (socket(7)) and a buffer set this way is no longer autotuned
 * (tcp(7): "setting SO_RCVBUF ... disables the automatic tuning"), as a proxy that sets
 * its own buffers does. Built by gitnetdiag.lab.proxyfaults with -DGND_SOCKET_BUFFER=<bytes>. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/socket.h>

#ifndef GND_SOCKET_BUFFER
#define GND_SOCKET_BUFFER 32768
#endif

typedef int (*socket_fn)(int, int, int);
typedef int (*accept_fn)(int, struct sockaddr *, socklen_t *);
typedef int (*accept4_fn)(int, struct sockaddr *, socklen_t *, int);

static void fix_buffers(int fd)
{
    int size = GND_SOCKET_BUFFER;

    if (fd < 0)
        return;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
}

int socket(int domain, int type, int protocol)
{
    static socket_fn next;
    int fd;

    if (!next)
        next = (socket_fn)dlsym(RTLD_NEXT, "socket");
    fd = next(domain, type, protocol);
    if ((domain == AF_INET || domain == AF_INET6) && (type & 0xf) == SOCK_STREAM)
        fix_buffers(fd);
    return fd;
}

int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    static accept_fn next;
    int client;

    if (!next)
        next = (accept_fn)dlsym(RTLD_NEXT, "accept");
    client = next(fd, addr, len);
    fix_buffers(client);
    return client;
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    static accept4_fn next;
    int client;

    if (!next)
        next = (accept4_fn)dlsym(RTLD_NEXT, "accept4");
    client = next(fd, addr, len, flags);
    fix_buffers(client);
    return client;
}
