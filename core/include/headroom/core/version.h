#pragma once
/// @file version.h
/// The tool version, written into reports and `--version`.

namespace headroom {

/// Headroom's version ("0.1.0"), from CMake's project(VERSION).
const char* toolVersion();

} // namespace headroom
