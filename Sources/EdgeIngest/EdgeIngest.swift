// The EdgeIngest library: everything in EdgeIngestCore, plus the API typed
// with Foundation (IngestConfiguration+FileURL.swift). The agent links only
// EdgeIngestCore: Foundation would add megabytes to its binary
// (docs/BENCHMARKS.md, "Binary size").
@_exported import EdgeIngestCore
