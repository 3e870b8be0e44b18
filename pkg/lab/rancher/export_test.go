package rancher

// ApplyDocs is applyDocs, for the agent tests.
var ApplyDocs = applyDocs
