"""The shared core: config, files and states, crash safety, model loading, scoring."""
