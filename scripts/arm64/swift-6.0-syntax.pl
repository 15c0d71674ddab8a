#!/usr/bin/perl -0pi
# Rewrites, in place, the Swift 6.1/6.2 syntax that Swift 6.0.3 (Debian 13's
# swiftlang, the arm64 build's compiler) cannot parse, in the two packages
# that need it (swift-log 1.16.2, swift-service-lifecycle 2.13.0):
#   perl -0pi scripts/arm64/swift-6.0-syntax.pl FILE.swift...
# - `nonisolated(nonsending)` (6.2): dropped; such a function then runs on the
#   global executor in 6.0 instead of the caller's, which only moves where an
#   async logging helper runs, not what it does.
# - `#if … _runtime(_multithreaded)` (6.1): true on Linux.
# - a trailing comma before `)` in argument and parameter lists (6.1): dropped.
s/nonisolated\(nonsending\)\s+//g;
s/_runtime\(_multithreaded\)/true/g;
s/,(\s*\n\s*\))/$1/g;
