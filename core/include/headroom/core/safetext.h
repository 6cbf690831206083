#pragma once
/// @file safetext.h
/// Text that came from a file or a path, made safe to print and to serialise: model files,
/// profiles, reports and path names are untrusted, and may hold bytes that are not UTF-8 (which
/// the JSON writer refuses) or control characters (which a terminal obeys).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace headroom {

/// @p text with every byte sequence that is not well-formed UTF-8 (RFC 3629: no overlongs, no
/// surrogates, nothing past U+10FFFF) replaced by U+FFFD, and every control character (C0
/// U+0000..U+001F, DEL U+007F, C1 U+0080..U+009F) written as a visible escape: `\xNN` for C0 and
/// DEL, `\u00NN` for C1. Well-formed text without controls is returned unchanged, so the
/// function is idempotent. Linear in the input; the output is at most 6 times as long.
std::string safeText(std::string_view text);

/// safeText of each line of @p text, its newlines kept: for messages and documents of several
/// lines (a report's notes, an error that quotes a file's lines). Idempotent and linear.
std::string safeLines(std::string_view text);

/// Byte offset of the first byte of @p text that is not well-formed UTF-8 (safeText's rule), or
/// nullopt when all of it is: for an option whose value must be text ("--title: byte 3 (0xff) is
/// not UTF-8").
std::optional<std::size_t> invalidUtf8At(std::string_view text);

/// True when safeText(@p text) would return @p text unchanged.
bool isSafeText(std::string_view text);

/// Length in bytes (1..4) of the printable character that starts at byte @p at of @p text: a
/// well-formed UTF-8 sequence that is no control character (the characters safeText keeps as
/// they are); 0 when the byte there is ill-formed UTF-8 or starts a control. @p at < size().
std::size_t printableLength(std::string_view text, std::size_t at);

} // namespace headroom
