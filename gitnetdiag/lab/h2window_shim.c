/* gitnetdiag lab, client-h2-window fault: make libcurl advertise a small HTTP/2 window.
 *
 * Loaded with LD_PRELOAD into the lab client's git (and the git-remote-https it starts).
 * libcurl 7.52 and later raise the download window: a large SETTINGS_INITIAL_WINDOW_SIZE
 * in the first SETTINGS (each stream) and nghttp2_session_set_local_window_size on stream 0
 * (the connection). Releases up to 7.51 did neither and kept HTTP/2's default 65,535 B
 * (curl issue 1102). This shim rewrites the first and leaves the second undone, so the
 * git of a lab run behaves as those releases did. Built by gitnetdiag.lab.h2window with
 * -DGND_STREAM_WINDOW=<bytes>; no nghttp2 header is needed, the few declarations below
 * follow nghttp2's public API (nghttp2.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#ifndef GND_STREAM_WINDOW
#define GND_STREAM_WINDOW 65535
#endif

#define SETTINGS_INITIAL_WINDOW_SIZE 4 /* RFC 9113 section 6.5.2 */
#define MAX_ENTRIES 32

typedef struct nghttp2_session nghttp2_session;
typedef struct {
    int32_t settings_id;
    uint32_t value;
} nghttp2_settings_entry;

typedef int (*submit_settings_fn)(nghttp2_session *, uint8_t, const nghttp2_settings_entry *,
                                  size_t);
typedef int (*set_local_window_fn)(nghttp2_session *, uint8_t, int32_t, int32_t);

int nghttp2_submit_settings(nghttp2_session *session, uint8_t flags,
                            const nghttp2_settings_entry *iv, size_t niv)
{
    static submit_settings_fn next;
    nghttp2_settings_entry copy[MAX_ENTRIES];
    size_t i;

    if (!next)
        next = (submit_settings_fn)dlsym(RTLD_NEXT, "nghttp2_submit_settings");
    if (!next)
        return -501; /* NGHTTP2_ERR_INVALID_ARGUMENT */
    if (niv > MAX_ENTRIES)
        return next(session, flags, iv, niv);
    for (i = 0; i < niv; i++) {
        copy[i] = iv[i];
        if (copy[i].settings_id == SETTINGS_INITIAL_WINDOW_SIZE &&
            copy[i].value > GND_STREAM_WINDOW)
            copy[i].value = GND_STREAM_WINDOW;
    }
    return next(session, flags, copy, niv);
}

int nghttp2_session_set_local_window_size(nghttp2_session *session, uint8_t flags,
                                          int32_t stream_id, int32_t window_size)
{
    static set_local_window_fn next;

    if (stream_id == 0)
        return 0; /* the connection keeps HTTP/2's default window */
    if (!next)
        next = (set_local_window_fn)dlsym(RTLD_NEXT, "nghttp2_session_set_local_window_size");
    if (!next)
        return -501;
    if (window_size > GND_STREAM_WINDOW)
        window_size = GND_STREAM_WINDOW;
    return next(session, flags, stream_id, window_size);
}
