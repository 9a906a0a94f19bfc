//! The tool definitions each family advertises (name, description, JSON Schema of the input,
//! MCP annotations), generated from the adapters' own input types with `schemars`, so the
//! schema a client sees and the parser that reads its calls are one definition. Exported by
//! `burrow schema FAMILY`, served by MCP `tools/list` and offered by the agent loop.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::Family;

/// One tool as a client lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// MCP annotations: whether the tool only reads, and whether it may destroy data.
    pub annotations: Annotations,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
}

pub const READS: Annotations = Annotations {
    read_only_hint: true,
    destructive_hint: false,
};
pub const WRITES: Annotations = Annotations {
    read_only_hint: false,
    destructive_hint: true,
};

/// The schema of `T`, its doc comment becoming the tool's description.
pub fn def<T: JsonSchema>(name: &str, annotations: Annotations) -> ToolDef {
    // Inlined: some MCP clients do not follow `$ref`.
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>();
    let mut input_schema = serde_json::to_value(schema).unwrap_or(Value::Null);
    strip_null(&mut input_schema);
    let mut description = String::new();
    if let Some(obj) = input_schema.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
        if let Some(Value::String(d)) = obj.remove("description") {
            description = d.replace('\n', " ");
        }
    }
    ToolDef {
        name: name.to_string(),
        description,
        input_schema,
        annotations,
    }
}

/// Optional fields are simply absent from `required`: drop schemars' `null` alternatives so
/// clients see `"type": "string"` rather than `["string", "null"]`.
fn strip_null(v: &mut Value) {
    match v {
        Value::Object(obj) => {
            if obj.get("default") == Some(&Value::Null) {
                obj.remove("default");
            }
            if let Some(Value::Array(types)) = obj.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    obj.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(values)) = obj.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }
            if let Some(Value::Array(alts)) = obj.get("anyOf") {
                let kept: Vec<Value> = alts
                    .iter()
                    .filter(|a| a.get("type") != Some(&Value::from("null")))
                    .cloned()
                    .collect();
                if kept.len() == 1
                    && let Some(Value::Object(inner)) = kept.into_iter().next()
                {
                    obj.remove("anyOf");
                    for (k, val) in inner {
                        obj.entry(k).or_insert(val);
                    }
                }
            }
            obj.values_mut().for_each(strip_null);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_null),
        _ => {}
    }
}

/// The tools of `family`, in the order clients list them.
pub fn tools(family: Family) -> Vec<ToolDef> {
    family.adapter().definitions()
}

/// The definitions as the family's clients expect them: MCP-style objects (`name`,
/// `description`, `input_schema`, `annotations`) for every family.
pub fn export(family: Family) -> Value {
    serde_json::to_value(tools(family)).unwrap_or(Value::Null)
}

/// The `tools` a Messages API request lists for `family`: the Anthropic-defined tool types
/// for the api (`bash_20250124`, `text_editor_20250728`) and memory (`memory_20250818`)
/// families, custom tools (`name`, `description`, `input_schema`) for the others.
pub fn messages_tools(family: Family) -> Value {
    family.adapter().messages_tools()
}

/// Custom tool definitions of a Messages API request.
pub fn custom_tools(defs: &[ToolDef]) -> Value {
    Value::Array(
        defs.iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.name, "description": t.description,
                    "input_schema": t.input_schema,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_has_object_schemas_with_descriptions() {
        for family in [
            Family::AgentToolset,
            Family::ClaudeCode,
            Family::Api,
            Family::Memory,
        ] {
            for t in tools(family) {
                assert_eq!(t.input_schema["type"], "object", "{}", t.name);
                assert!(!t.description.is_empty(), "{}", t.name);
            }
        }
        let grep = &tools(Family::ClaudeCode)[6];
        assert!(grep.input_schema["properties"]["-i"].is_object());
        assert_eq!(
            grep.input_schema["required"],
            serde_json::json!(["pattern"])
        );
    }
}
