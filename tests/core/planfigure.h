#pragma once
/// @file planfigure.h
/// The value of an engine figure of a plan (PlanResult::engineFigures, the lines the engine would
/// print), for core tests; a figure the plan lacks fails the test.

#include "headroom/core/plan.h"

#include <catch2/catch.hpp>

#include <string>

namespace headroom::testfixtures {

/// The value of @p p's engine figure named @p name (its unit is the figure's: bytes, tokens,
/// layers ...); FAILs the running test when the plan carries no such figure.
inline double engineFigure(const PlanResult& p, const std::string& name)
{
    for (const EngineFigure& f : p.engineFigures)
        if (f.name == name)
            return f.value;
    FAIL("no figure " << name);
    return 0;
}

} // namespace headroom::testfixtures
