// The EdgeIngest library: everything in EdgeIngestCore, plus the API typed
// with Foundation (IngestConfiguration+FileURL.swift). The agent links only
// EdgeIngestCore: Foundation would add 5 MB to its binary.
@_exported import EdgeIngestCore
