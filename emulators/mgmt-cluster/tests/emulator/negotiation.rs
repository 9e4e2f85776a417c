//! Content negotiation and the endpoints kubectl leans on, at the HTTP level: protobuf
//! request bodies, `Accept` with transformations, aggregated discovery, OpenAPI caching,
//! events and their field selectors.

use crate::common::*;
use serde_json::{Value, json};

const KUBECTL_DISCOVERY: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
     application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const CLIENTSET: &str = "application/vnd.kubernetes.protobuf,application/json";

fn varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// A length-delimited protobuf field.
fn field(n: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(u64::from(n) << 3 | 2, &mut out);
    varint(payload.len() as u64, &mut out);
    out.extend_from_slice(payload);
    out
}

/// A body as client-go's protobuf serializer writes it: `k8s\0` + `runtime.Unknown`.
fn protobuf_body(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
    [b"k8s\0".to_vec(), field(1, &type_meta), field(2, raw)].concat()
}

#[tokio::test]
async fn clientset_protobuf_bodies_are_read_and_answered_in_json() {
    let h = quiet().await;
    let ns = field(1, &field(1, b"team"));
    let created = h
        .request(
            "POST",
            "/api/v1/namespaces",
            &[
                ("content-type", "application/vnd.kubernetes.protobuf"),
                ("accept", CLIENTSET),
            ],
            protobuf_body("v1", "Namespace", &ns),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.json());
    assert_eq!(created.header("content-type"), "application/json");
    assert_eq!(created.json()["status"]["phase"], "Active");

    // A Secret: `data` is map<string, bytes>.
    let entry = [field(1, b"key"), field(2, &[0, 255])].concat();
    let secret = [
        field(1, &field(1, b"s")),
        field(2, &entry),
        field(3, b"Opaque"),
    ]
    .concat();
    let created = h
        .request(
            "POST",
            "/api/v1/namespaces/team/secrets",
            &[("content-type", "application/vnd.kubernetes.protobuf")],
            protobuf_body("v1", "Secret", &secret),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.json());
    assert_eq!(created.json()["data"], json!({"key": "AP8="}));

    // A body that is not protobuf at all.
    let bad = h
        .request(
            "POST",
            "/api/v1/namespaces/team/configmaps",
            &[("content-type", "application/vnd.kubernetes.protobuf")],
            b"{}".to_vec(),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.json()["message"],
        "the object provided is unrecognized (must be of type ConfigMap): provided data does \
         not appear to be a protobuf message, expected prefix [107 56 115 0] ({})"
    );

    // Custom resources have no protobuf form; the request is decoded, and fails, as a 400.
    let hc = h
        .request(
            "POST",
            "/apis/hypershift.openshift.io/v1beta1/namespaces/team/hostedclusters",
            &[("content-type", "application/vnd.kubernetes.protobuf")],
            protobuf_body("hypershift.openshift.io/v1beta1", "HostedCluster", b""),
        )
        .await;
    assert_eq!(hc.status, 400);
}

#[tokio::test]
async fn what_cannot_be_produced_or_read_is_refused() {
    let h = quiet().await;
    let only_protobuf = h
        .request(
            "GET",
            "/api/v1/namespaces",
            &[("accept", "application/vnd.kubernetes.protobuf")],
            Vec::new(),
        )
        .await;
    assert_eq!(only_protobuf.status, 406);
    assert_eq!(only_protobuf.json()["reason"], "NotAcceptable");
    assert_eq!(
        only_protobuf.json()["message"],
        "only the following media types are accepted: application/json, application/yaml"
    );

    // CBOR serving is off by default: 415, on which client-go retries in JSON.
    let cbor = h
        .request(
            "POST",
            "/api/v1/namespaces",
            &[("content-type", "application/cbor")],
            vec![0xa0],
        )
        .await;
    assert_eq!(cbor.status, 415);
    assert_eq!(
        cbor.json()["message"],
        "the body of the request was in an unknown format - accepted media types include: \
         application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );

    let patch = h
        .request(
            "PATCH",
            "/apis/hypershift.openshift.io/v1beta1/namespaces/default/hostedclusters/x",
            &[("content-type", "application/strategic-merge-patch+json")],
            b"{}".to_vec(),
        )
        .await;
    assert_eq!(patch.status, 415);
    assert_eq!(
        patch.json()["message"],
        "the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );

    let yaml = h
        .request(
            "GET",
            "/api/v1/namespaces/default",
            &[("accept", "application/yaml")],
            Vec::new(),
        )
        .await;
    assert_eq!(yaml.status, 200);
    assert_eq!(yaml.header("content-type"), "application/yaml");
    assert!(String::from_utf8_lossy(&yaml.body).contains("kind: Namespace"));
}

#[tokio::test]
async fn discovery_is_aggregated_when_asked() {
    let h = quiet().await;
    let apis = h
        .request("GET", "/apis", &[("accept", KUBECTL_DISCOVERY)], Vec::new())
        .await;
    assert_eq!(
        apis.header("content-type"),
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let doc = apis.json();
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    let group = &doc["items"][0];
    assert_eq!(group["metadata"]["name"], "hypershift.openshift.io");
    let resources = &group["versions"][0]["resources"];
    assert_eq!(resources[0]["resource"], "hostedclusters");
    assert_eq!(resources[1]["shortNames"], json!(["np", "nps"]));

    let core = h
        .request("GET", "/api", &[("accept", KUBECTL_DISCOVERY)], Vec::new())
        .await;
    assert_eq!(core.json()["items"][0]["versions"][0]["version"], "v1");

    let legacy = h
        .request(
            "GET",
            "/apis",
            &[("accept", "application/json")],
            Vec::new(),
        )
        .await;
    assert_eq!(legacy.header("content-type"), "application/json");
    assert_eq!(legacy.json()["kind"], "APIGroupList");
}

#[tokio::test]
async fn tables_carry_columns_once_per_watch() {
    let h = quiet().await;
    for name in ["a", "b"] {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        let r = h
            .request(
                "POST",
                "/api/v1/namespaces/default/configmaps",
                &[("content-type", "application/json")],
                cm.to_string().into_bytes(),
            )
            .await;
        assert_eq!(r.status, 201);
    }
    let list = h
        .request(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            &[("accept", TABLE)],
            Vec::new(),
        )
        .await;
    let table = list.json();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["columnDefinitions"][1]["name"], "Data");
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");

    let watch = h
        .request(
            "GET",
            "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1&includeObject=Object",
            &[("accept", TABLE)],
            Vec::new(),
        )
        .await;
    let events: Vec<Value> = String::from_utf8_lossy(&watch.body)
        .lines()
        .map(|l| serde_json::from_str(l).expect("event json"))
        .collect();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events[0]["object"]["columnDefinitions"].is_array());
    assert!(events[1]["object"]["columnDefinitions"].is_null());
    assert_eq!(
        events[1]["object"]["rows"][0]["object"]["kind"],
        "ConfigMap"
    );

    let bad = h
        .request(
            "GET",
            "/api/v1/namespaces/default/configmaps?includeObject=All",
            &[("accept", TABLE)],
            Vec::new(),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.json()["message"],
        "Unable to convert to Table as requested: includeObject: Unsupported value: \"All\": \
         supported values: \"Metadata\", \"None\", \"Object\""
    );
}

#[tokio::test]
async fn openapi_documents_are_cached_by_hash() {
    let h = quiet().await;
    let root = h
        .request("GET", "/openapi/v3", &[], Vec::new())
        .await
        .json();
    let url = root["paths"]["apis/hypershift.openshift.io/v1beta1"]["serverRelativeURL"]
        .as_str()
        .expect("url")
        .to_owned();
    let doc = h.request("GET", &url, &[], Vec::new()).await;
    assert_eq!(doc.status, 200);
    assert_eq!(doc.header("cache-control"), "public, immutable");
    let stale = h
        .request(
            "GET",
            "/openapi/v3/apis/hypershift.openshift.io/v1beta1?hash=0",
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(stale.status, 301);
    assert_eq!(stale.header("location"), url);
    let etag = doc.header("etag").to_owned();
    let unchanged = h
        .request("GET", &url, &[("if-none-match", &etag)], Vec::new())
        .await;
    assert_eq!(unchanged.status, 304);

    // v2, as client-go asks for it: gnostic protobuf (field 1: swagger "2.0").
    let v2 = h
        .request(
            "GET",
            "/openapi/v2",
            &[(
                "accept",
                "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
            )],
            Vec::new(),
        )
        .await;
    assert_eq!(v2.status, 200);
    assert_eq!(
        v2.header("content-type"),
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    assert_eq!(&v2.body[..5], b"\x0a\x032.0");
    let json = h
        .request("GET", "/openapi/v2", &[], Vec::new())
        .await
        .json();
    assert_eq!(json["swagger"], "2.0");
}

#[tokio::test]
async fn events_are_stored_validated_and_selected_as_describe_selects_them() {
    let h = quiet().await;
    let event = |ns: &str, name: &str, involved: &str| {
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": ns},
            "involvedObject": {"kind": "ConfigMap", "name": involved, "namespace": ns, "uid": "u1"},
            "reason": "Tested", "message": "m", "type": "Normal", "count": 1,
            "source": {"component": "test"}})
    };
    for (name, involved) in [("e1", "a"), ("e2", "b")] {
        let r = h
            .request(
                "POST",
                "/api/v1/namespaces/default/events",
                &[("content-type", "application/json")],
                event("default", name, involved).to_string().into_bytes(),
            )
            .await;
        assert_eq!(r.status, 201, "{:?}", r.json());
    }
    let mut mismatched = event("default", "e3", "a");
    mismatched["involvedObject"]["namespace"] = json!("other");
    let r = h
        .request(
            "POST",
            "/api/v1/namespaces/default/events",
            &[("content-type", "application/json")],
            mismatched.to_string().into_bytes(),
        )
        .await;
    assert_eq!(r.status, 422);
    assert_eq!(
        r.json()["message"],
        "Event \"e3\" is invalid: involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"
    );

    let selected = h
        .request(
            "GET",
            "/api/v1/namespaces/default/events?fieldSelector=involvedObject.kind%3DConfigMap%2C\
             involvedObject.uid%3Du1%2CinvolvedObject.name%3Da%2CinvolvedObject.namespace%3Ddefault",
            &[("accept", CLIENTSET)],
            Vec::new(),
        )
        .await;
    let items = selected.json()["items"].clone();
    assert_eq!(items.as_array().map(Vec::len), Some(1), "{items}");
    assert_eq!(items[0]["metadata"]["name"], "e1");

    let unsupported = h
        .request(
            "GET",
            "/api/v1/namespaces/default/configmaps?fieldSelector=data.x%3Dy",
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(unsupported.status, 400);
    assert_eq!(
        unsupported.json()["message"],
        "field label not supported: data.x"
    );
}
