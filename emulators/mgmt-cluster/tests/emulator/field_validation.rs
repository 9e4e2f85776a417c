//! `fieldValidation` as a client sees it: misspelt and repeated fields refused (`Strict`),
//! reported in `Warning` headers (`Warn`, the default), or silently dropped (`Ignore`) —
//! and never stored.
//!
//! The expected wording is kube-apiserver's, from its integration test
//! `test/integration/apiserver/field_validation_test.go` (CRD cases: `unknown field
//! "spec.ports[0].unknownNested"`, `duplicate field "knownField1"`, `line 10: key
//! "knownField1" already set in map`) and the handlers that produce it
//! (`apiserver/pkg/endpoints/handlers/{create,patch,rest}.go`: `transformDecodeError`,
//! `jsonPatcher.applyPatchToCurrentObject`, `applyPatcher`). Server-side apply of an unknown
//! field fails whatever the directive, with structured-merge-diff's message and a 500, as in
//! current kube-apiserver (kubernetes/kubernetes#122480 and #139253).

use crate::common::*;
use hypersaga_hypershift::HostedCluster;
use kube::api::{Api, Patch, PatchParams, ValidationDirective};
use serde_json::{Value, json};

const HCS: &str = "/apis/hypershift.openshift.io/v1beta1/namespaces/fv/hostedclusters";

/// The product's HostedCluster with `spec.release` misspelt as `spec.relase`.
fn misspelt(name: &str) -> Value {
    let mut hc = serde_json::to_value(hosted_cluster(name, "fv")).unwrap();
    let release = hc["spec"]
        .as_object_mut()
        .unwrap()
        .remove("release")
        .unwrap();
    hc["spec"]["relase"] = release;
    hc["spec"]["release"] = json!({"image": IMAGE});
    hc
}

#[tokio::test]
async fn strict_refuses_a_misspelt_field_naming_it() {
    let h = quiet().await;
    namespace(&h.client, "fv").await;
    let reply = h
        .raw(
            "POST",
            &format!("{HCS}?fieldValidation=Strict"),
            "application/json",
            misspelt("strict").to_string(),
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(reply.body["reason"], "BadRequest");
    assert_eq!(
        reply.body["message"],
        "HostedCluster in version \"v1beta1\" cannot be handled as a HostedCluster: \
         strict decoding error: unknown field \"spec.relase\""
    );
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "fv");
    assert!(
        hcs.get_opt("strict").await.unwrap().is_none(),
        "nothing stored"
    );
}

#[tokio::test]
async fn strict_names_duplicates_before_unknown_fields() {
    let h = quiet().await;
    namespace(&h.client, "fv").await;
    // A body with a repeated key, as a hand-written manifest might have.
    let body = r#"{"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm"},
        "data": {"a": "1", "a": "2"}, "dta": {"b": "x"}}"#;
    let reply = h
        .raw(
            "POST",
            "/api/v1/namespaces/fv/configmaps?fieldValidation=Strict",
            "application/json",
            body,
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(
        reply.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: \
         duplicate field \"a\", unknown field \"dta\""
    );
}

#[tokio::test]
async fn warn_is_the_default_and_unknown_fields_are_never_stored() {
    let h = quiet().await;
    namespace(&h.client, "fv").await;
    let reply = h
        .raw(
            "POST",
            HCS,
            "application/json",
            misspelt("warned").to_string(),
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(
        reply.warnings,
        ["299 - \"unknown field \\\"spec.relase\\\"\""]
    );
    assert!(reply.body["spec"].get("relase").is_none());

    let ignored = h
        .raw(
            "POST",
            &format!("{HCS}?fieldValidation=Ignore"),
            "application/json",
            misspelt("ignored").to_string(),
        )
        .await;
    assert_eq!(ignored.status, 201, "{}", ignored.body);
    assert!(ignored.warnings.is_empty());

    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "fv");
    for name in ["warned", "ignored"] {
        let stored = serde_json::to_value(hcs.get(name).await.unwrap()).unwrap();
        assert!(stored["spec"].get("relase").is_none(), "{name}: pruned");
    }
    // The raw object (not through a typed client) has no trace of it either.
    let raw = h
        .raw("GET", &format!("{HCS}/warned"), "application/json", "")
        .await;
    assert!(raw.body["spec"].get("relase").is_none());
}

#[tokio::test]
async fn strict_merge_patch_is_422_on_the_patch() {
    let h = quiet().await;
    namespace(&h.client, "fv").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "fv");
    create_hosted_cluster(&hcs, "mp", "fv").await.unwrap();
    let err = hcs
        .patch(
            "mp",
            &PatchParams {
                field_validation: Some(ValidationDirective::Strict),
                ..Default::default()
            },
            &Patch::Merge(json!({"spec": {"dns": {"baseDomian": "example.org"}}})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected an API error, got {err:?}")
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    let cause = &status.details.unwrap().causes[0];
    assert_eq!(cause.field, "patch");
    assert!(
        cause
            .message
            .ends_with("strict decoding error: unknown field \"spec.dns.baseDomian\""),
        "{}",
        cause.message
    );
}

#[tokio::test]
async fn apply_of_an_unknown_field_fails_whatever_the_directive() {
    let h = quiet().await;
    namespace(&h.client, "fv").await;
    let hcs: Api<HostedCluster> = Api::namespaced(h.client.clone(), "fv");
    let err = hcs
        .patch(
            "ssa",
            &PatchParams::apply("hypersaga").force(),
            &Patch::Apply(misspelt("ssa")),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected an API error, got {err:?}")
    };
    assert_eq!(status.code, 500);
    assert_eq!(
        status.message,
        "failed to create typed patch object (fv/ssa; hypershift.openshift.io/v1beta1, \
         Kind=HostedCluster): .spec.relase: field not declared in schema"
    );
    assert!(hcs.get_opt("ssa").await.unwrap().is_none());
}

#[tokio::test]
async fn apply_reports_repeated_keys_with_their_lines() {
    let h = quiet().await;
    namespace(&h.client, "fv").await;
    let body = "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\",\n\
                \"metadata\": {\"name\": \"cm\"},\n\
                \"data\": {\"a\": \"1\",\n\
                \"a\": \"2\"}}";
    let path = "/api/v1/namespaces/fv/configmaps/cm?fieldManager=me";
    let strict = h
        .raw(
            "PATCH",
            &format!("{path}&fieldValidation=Strict"),
            "application/apply-patch+yaml",
            body,
        )
        .await;
    assert_eq!(strict.status, 400, "{}", strict.body);
    assert_eq!(
        strict.body["message"],
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  \
         line 4: key \"a\" already set in map"
    );
    let warned = h
        .raw("PATCH", path, "application/apply-patch+yaml", body)
        .await;
    assert_eq!(warned.status, 201, "{}", warned.body);
    assert_eq!(
        warned.warnings,
        ["299 - \"line 4: key \\\"a\\\" already set in map\""]
    );
    assert_eq!(warned.body["data"]["a"], "2", "the last value wins");
}

#[tokio::test]
async fn bad_option_values_are_invalid_options() {
    let h = quiet().await;
    namespace(&h.client, "fv").await;
    let reply = h
        .raw(
            "POST",
            "/api/v1/namespaces/fv/configmaps?fieldValidation=Loose&dryRun=Some",
            "application/json",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}).to_string(),
        )
        .await;
    // `ValidateCreateOptions` (apimachinery meta/v1 validation).
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert_eq!(
        reply.body["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: [dryRun: Unsupported value: [\"Some\"]: \
         supported values: \"All\", fieldValidation: Unsupported value: \"Loose\": supported \
         values: \"\", \"Ignore\", \"Strict\", \"Warn\"]"
    );
}
