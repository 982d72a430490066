// An audit worker that cannot start (as when a dependency is missing).
throw new Error("cannot load the audit engine");
