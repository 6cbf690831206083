#pragma once
/// @file importerror.h
/// Errors of the importers (GGUF, safetensors, Hugging Face config.json, model directories).
/// Model files are untrusted input (STYLE.md §6, §7): every failure class has its own code, and
/// the error says what is wrong, where (byte offset and/or key) and what was expected.

#include <cstdint>
#include <optional>
#include <string>

namespace headroom {

/// One code per failure class. Tests assert the code; messages are for people.
enum class ImportErrorCode {
    FileNotFound,            ///< the path (or a split shard it names) does not exist
    ReadFailed,              ///< the OS refused to open or read the file
    BadMagic,                ///< not "GGUF" / not a safetensors header / unknown file kind
    UnsupportedVersion,      ///< GGUF version outside 1..3 (the error names both versions)
    Truncated,               ///< the file ends before a field it declares (offset = the field)
    CountTooLarge,           ///< a count (KVs, tensors, array items) cannot fit in the bytes remaining
    StringTooLong,           ///< a string length exceeds the bytes remaining or the 16 MiB limit
    BadValueType,            ///< a GGUF metadata value type id outside 0..12
    DuplicateKey,            ///< a metadata key (or JSON tensor name) appears twice
    WrongKeyType,            ///< a known key has the wrong value type (general.alignment not u32, ...)
    BadAlignment,            ///< general.alignment is 0 or not a power of two
    TooManyDimensions,       ///< a tensor declares more than 4 dimensions (GGML_MAX_DIMS)
    BadDimension,            ///< a dimension is negative/too large, or ne[0] is not a multiple of the block size
    UnknownTensorType,       ///< a GGML type id that is unknown or removed: "cannot size"
    Overflow,                ///< an element count or byte size overflows 64 bits (or int64 as ggml requires)
    NestingTooDeep,          ///< arrays nested deeper than any real file needs
    BadTensorOffset,         ///< a tensor offset misaligned, out of order or past the end of the file
    DuplicateTensor,         ///< two tensors with the same name
    BadHeaderLength,         ///< safetensors header length zero, past the file or over 100 MB
    BadJson,                 ///< JSON that does not parse, or not an object where one is required
    MissingKey,              ///< a required key is absent
    BadValue,                ///< a key has an impossible value (0 layers, heads not dividing, ...)
    UnsupportedArchitecture, ///< a model family Headroom cannot describe
    UnsupportedFormat,       ///< a path that is none of: config.json, directory, .safetensors, .gguf
};

/// Stable lower-case name of a code ("duplicate-key"), for JSON output and logs.
const char* errorCodeName(ImportErrorCode code);

/// What went wrong while importing, and where.
struct ImportError {
    ImportErrorCode code = ImportErrorCode::ReadFailed; ///< the failure class
    std::string message;                  ///< what was expected and what was found
    std::string file;                     ///< the file being read (path or name given by the caller)
    std::optional<std::uint64_t> byteOffset; ///< offset in bytes from the start of @ref file, when known
    std::string key;                      ///< metadata key, tensor name or JSON key involved; empty if none
};

/// "FILE: at byte N (key K): MESSAGE" (parts without a value are left out).
std::string toString(const ImportError& error);

} // namespace headroom
