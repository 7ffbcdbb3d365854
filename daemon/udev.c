/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Block device uevents as an sd-event io source (udev.h). */
#include <libudev.h>

#include "log.h"
#include "macro.h"
#include "udev.h"

struct UdevWatch {
        struct udev *udev;
        struct udev_monitor *monitor;
        sd_event_source *io;
        const char *source;
        udev_watch_handler_t handler;
        void *userdata;
};

static int on_udev_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        UdevWatch *w = userdata;

        /* Drain the socket: each wakeup may hold several messages. */
        for (;;) {
                errno = 0;
                struct udev_device *d = udev_monitor_receive_device(w->monitor);
                if (!d) {
                        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == 0)
                                return 0;
                        if (errno == EINTR)
                                continue;
                        /* ENOBUFS: the kernel dropped messages; anything may have changed. */
                        log_warning_errno(errno, "Lost block device events (%m), rescanning.");
                        w->handler(w, NULL, NULL, NULL, w->userdata);
                        return 0;
                }
                const char *action = udev_device_get_action(d), *sysname = udev_device_get_sysname(d),
                           *devtype = udev_device_get_devtype(d);
                if (action && sysname && devtype &&
                    (streq(devtype, "disk") || streq(devtype, "partition"))) {
                        log_debug("uevent: %s %s (%s)", action, sysname, devtype);
                        w->handler(w, action, sysname, devtype, w->userdata);
                }
                udev_device_unref(d);
        }
}

int udev_watch_new(sd_event *e, udev_watch_handler_t handler, void *userdata, UdevWatch **ret) {
        _cleanup_(udev_watch_freep) UdevWatch *w = NULL;
        int r;

        w = calloc(1, sizeof(UdevWatch));
        if (!w)
                return -ENOMEM;
        w->handler = handler;
        w->userdata = userdata;
        /* Without udevd nobody forwards kernel events on the "udev" source. */
        w->source = access("/run/udev/control", F_OK) == 0 ? "udev" : "kernel";

        w->udev = udev_new();
        if (!w->udev)
                return errno > 0 ? -errno : -ENOMEM;
        w->monitor = udev_monitor_new_from_netlink(w->udev, w->source);
        if (!w->monitor)
                return errno > 0 ? -errno : -EIO;
        r = udev_monitor_filter_add_match_subsystem_devtype(w->monitor, "block", NULL);
        if (r < 0)
                return r;
        /* A burst of hotplug events must not overflow the socket; losing some is survivable
         * (we rescan), so failing to enlarge it is not fatal. */
        r = udev_monitor_set_receive_buffer_size(w->monitor, 16 * 1024 * 1024);
        if (r < 0)
                log_debug_errno(r, "Cannot enlarge the uevent receive buffer, ignoring: %m");
        r = udev_monitor_enable_receiving(w->monitor);
        if (r < 0)
                return r;
        r = sd_event_add_io(e, &w->io, udev_monitor_get_fd(w->monitor), EPOLLIN, on_udev_event, w);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(w->io, "udev-monitor");

        log_debug("Listening for block device events on the %s source.", w->source);
        *ret = TAKE_PTR(w);
        return 0;
}

UdevWatch *udev_watch_free(UdevWatch *w) {
        if (!w)
                return NULL;
        sd_event_source_disable_unref(w->io);
        udev_monitor_unref(w->monitor);
        udev_unref(w->udev);
        return mfree(w);
}

const char *udev_watch_source(const UdevWatch *w) {
        return w->source;
}
