// The library's core: the durable queue, the uploader and sinks, the app
// and its credentials, realms. The model it stores and sends (records,
// record types, ObjectId, JSON, the line formats) is EdgeIngestModel,
// re-exported here so that `import EdgeIngestCore` (or `import EdgeIngest`)
// is all an app or the agent needs.
@_exported import EdgeIngestModel
