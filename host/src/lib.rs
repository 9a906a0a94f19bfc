//! burrow-host: runs WASI components against burrow workspaces.
