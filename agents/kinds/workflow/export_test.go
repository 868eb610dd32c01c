package workflow

// ScopeName is the key prefix of an orchestrator step's input requests.
var ScopeName = scopeName
