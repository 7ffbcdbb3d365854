/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Strings from the kernel and from users (a process's comm, mount targets and sources, loop
 * backing paths, configuration text) made fit for D-Bus and JSON, which take valid UTF-8 only
 * (sd-bus refuses to send anything else: one bad string would break a whole reply). Escaping
 * happens at the boundary, where a string leaves the daemon; what is stored and acted upon
 * stays the kernel's bytes. */

#include <stdbool.h>
#include <stddef.h>

/* Length (1-4) of the valid UTF-8 character s starts with; 0 at the end of s or when s starts
 * with a byte that does not begin a valid character (stray continuation bytes, overlong forms,
 * surrogates, code points above U+10FFFF, a sequence cut short). */
size_t utf8_char_length(const char *s);

/* True when utf8_escape() would return s unchanged: valid UTF-8 without control characters
 * other than tab and newline. */
bool utf8_is_clean(const char *s);

/* A copy of s where every byte that is not part of a valid UTF-8 character, and every control
 * character but tab and newline (C0 and DEL, which could drive a terminal), is written as
 * "\xNN": valid UTF-8 that shows the bytes. A literal "\xNN" in s is left as it is, so the
 * form is for people, not for decoding. NULL becomes "". Returns NULL only when out of
 * memory. */
char *utf8_escape(const char *s);

/* The number of bytes of the longest prefix of s that has at most max bytes and does not end
 * inside a UTF-8 character (a cut by bytes must not split one). */
size_t utf8_prefix_length(const char *s, size_t max);
