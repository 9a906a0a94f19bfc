//! Network egress for guests: the session's policy (deny by default, allow rules, secrets
//! bound to hosts), the egress layer that enforces it (with `tape`, its side of deterministic
//! calls: replies recorded and replayed), and the operator's settings. See
//! docs/ARCHITECTURE.md, "Network".

pub mod egress;
pub mod operator;
pub mod policy;
mod tape;

pub use egress::{Egress, NetLimits, NetRecord};
pub use operator::Operator;
pub use policy::{NetPolicy, RuleError, SecretRule, Verdict};
