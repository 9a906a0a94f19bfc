//! Network egress for guests: the session's policy (deny by default, allow rules, secrets
//! bound to hosts). See docs/ARCHITECTURE.md, "Network".

pub mod policy;

pub use policy::{NetPolicy, RuleError, SecretRule, Verdict};
