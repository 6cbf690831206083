#pragma once
/// @file profiles.h
/// Versioned JSON profiles of models, cards and engine policies (profiles/), each validated on
/// load against its JSON Schema (profiles/schemas/, valijson). A user directory overlays the
/// built-in one: a user file with the same id replaces the built-in entry.

#include "headroom/core/card.h"
#include "headroom/core/enginepolicy.h"
#include "headroom/core/modelprofile.h"

#include <tl/expected.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// Schema version of profile files this build reads (STYLE.md §8).
inline constexpr int kProfileSchemaVersion = 1;

/// A profile that could not be loaded: file, JSON pointer of the key, and the problem.
struct ProfileError {
    std::string file;      ///< path of the profile file
    std::string key;       ///< JSON pointer ("/architecture/kv_heads") or "" for the whole file
    std::string message;   ///< what was expected and what was found
};

/// "FILE: KEY: MESSAGE".
std::string toString(const ProfileError& error);

/// Every profile of one kind, built-in overlaid by user.
struct ProfileSet {
    std::vector<ModelProfile> models;
    std::vector<Card> cards;
    std::vector<EnginePolicy> engines;
    /// User profile files that were skipped (unreadable, invalid, or a duplicate id), one error
    /// each: the front ends print them as warnings. Built-in profiles never land here.
    std::vector<ProfileError> warnings;

    const ModelProfile* findModel(const std::string& id) const;
    const Card* findCard(const std::string& id) const;
    const EnginePolicy* findEngine(const std::string& id) const;
};

/// Loads profiles from @p builtinDir (containing models/, cards/, engines/, schemas/) and then
/// @p userDir (same layout without schemas; may be empty or missing). Returns the first error of
/// the built-in folder: unreadable file, invalid JSON, schema violation (with the key),
/// schema_version mismatch, or duplicate id within one directory. A user file with any of these
/// is skipped and its error kept in ProfileSet::warnings. Every file is bounded: a regular file of
/// at most 4 MiB, nested at most 64 deep, strings at most 4096 bytes, no duplicate keys.
tl::expected<ProfileSet, ProfileError> loadProfiles(const std::filesystem::path& builtinDir,
                                                    const std::filesystem::path& userDir = {});

/// The built-in profile folder: $HEADROOM_PROFILES if set, else the first of
/// <exe>/../share/headroom/profiles and <exe>/../../profiles (build tree) that exists,
/// else the source folder compiled in.
std::filesystem::path defaultProfilesDir(const std::filesystem::path& executablePath);

/// The user overlay folder: $HEADROOM_USER_PROFILES, else $XDG_CONFIG_HOME/headroom/profiles,
/// else ~/.config/headroom/profiles.
std::filesystem::path defaultUserProfilesDir();

} // namespace headroom
