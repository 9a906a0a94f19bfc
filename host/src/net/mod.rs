//! Network egress for guests: the session's policy (deny by default, allow rules, secrets
//! bound to hosts). See docs/ARCHITECTURE.md, "Network".

pub mod egress;
pub mod policy;

pub use egress::{Egress, NetLimits, NetRecord};
pub use policy::{NetPolicy, RuleError, SecretRule, Verdict};
