//! `kubernetes.yaml`: a Deployment and a Service of the winner, built from the Kubernetes API's
//! own types (k8s-openapi, API 1.33) and serialised as two YAML documents. The container runs
//! the engine's usual image with the winner's arguments, requests the accelerators its trial
//! used (`nvidia.com/gpu`, `huawei.com/Ascend910`, `amd.com/gpu`), and is ready when the
//! engine's health path answers. Secrets come from a Secret named `<name>-secrets` (one key per
//! variable) and reach the arguments as `$(VAR)`, which Kubernetes expands.

use super::deploy::{comment, header, Accelerator, Server};
use crate::space::secrets::{Piece, Secrets};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, HTTPGetAction,
    HostPathVolumeSource, PodSpec, PodTemplateSpec, Probe, ResourceRequirements, SecretKeySelector,
    Service, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// The manifests' file name.
pub const FILE: &str = "kubernetes.yaml";

/// The manifests of `server`: a comment header, the Deployment, the Service.
pub(crate) fn render(server: &Server<'_>) -> anyhow::Result<String> {
    let name = server.name();
    let labels: BTreeMap<String, String> = [
        ("app.kubernetes.io/name".to_string(), name.clone()),
        (
            "app.kubernetes.io/managed-by".to_string(),
            "infertune".to_string(),
        ),
    ]
    .into();
    let meta = ObjectMeta {
        name: Some(name.clone()),
        labels: Some(labels.clone()),
        ..ObjectMeta::default()
    };
    let deployment = Deployment {
        metadata: meta.clone(),
        spec: Some(DeploymentSpec {
            replicas: Some(i32::try_from(server.deployment.replicas).unwrap_or(i32::MAX)),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels.clone()),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod(server, &name)?),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    };
    let service = Service {
        metadata: meta,
        spec: Some(ServiceSpec {
            selector: Some(labels),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port: i32::from(server.port()),
                target_port: Some(IntOrString::String("http".into())),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    };
    let mut lines = header(server.best);
    lines.push(format!(
        "Apply it: kubectl apply -f {FILE} (as {}: a Deployment and a Service)",
        name
    ));
    let variables = server.secret_variables();
    if !variables.is_empty() {
        lines.push(format!(
            "Secrets come from the Secret {name}-secrets, keys {}: kubectl create secret \
             generic {name}-secrets --from-literal=NAME=VALUE …",
            variables.join(", ")
        ));
    }
    if let Some(pin) = &server.deployment.pinning {
        lines.push(format!(
            "The winner ran bound with numactl {}: on Kubernetes, the kubelet's CPU and \
             topology managers (static / single-numa-node) give such a binding",
            pin.numactl
        ));
    }
    if let Some(model) = server.model_path() {
        lines.push(format!(
            "The model is mounted from the node's {model}; replace the volume with one every \
             node can reach"
        ));
    }
    let mut text = format!(
        "{}{}---\n{}",
        comment(&lines),
        serde_saphyr::to_string(&deployment)?,
        serde_saphyr::to_string(&service)?
    );
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// The pod: one container of the engine, its model and shared-memory volumes.
fn pod(server: &Server<'_>, name: &str) -> anyhow::Result<PodSpec> {
    let secrets = server.secrets();
    let (image, program) = server.image()?;
    let args = server
        .leading
        .iter()
        .chain(&server.args_listening_everywhere())
        .map(|a| expanded(a, secrets))
        .collect();
    // Variables referenced as `$(VAR)` come first: Kubernetes expands only those defined
    // before.
    let env = server
        .secret_variables()
        .into_iter()
        .filter(|v| !server.env().contains_key(*v))
        .map(|v| secret_var(v, v, name))
        .chain(
            server
                .env()
                .iter()
                .map(|(key, value)| env_var(key, value, secrets, name)),
        )
        .collect();
    let mut volumes = vec![Volume {
        name: "shm".into(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".into()),
            ..EmptyDirVolumeSource::default()
        }),
        ..Volume::default()
    }];
    let mut mounts = vec![VolumeMount {
        name: "shm".into(),
        mount_path: "/dev/shm".into(),
        ..VolumeMount::default()
    }];
    if let Some(model) = server.model_path() {
        volumes.push(Volume {
            name: "model".into(),
            host_path: Some(HostPathVolumeSource {
                path: model.into(),
                type_: None,
            }),
            ..Volume::default()
        });
        mounts.push(VolumeMount {
            name: "model".into(),
            mount_path: model.into(),
            read_only: Some(true),
            ..VolumeMount::default()
        });
    }
    let readiness = &server.deployment.launch.readiness;
    let container = Container {
        name: "engine".into(),
        image: Some(image),
        command: Some(vec![program.into()]),
        args: Some(args),
        env: Some(env),
        ports: Some(vec![ContainerPort {
            name: Some("http".into()),
            container_port: i32::from(server.port()),
            ..ContainerPort::default()
        }]),
        readiness_probe: Some(Probe {
            http_get: Some(HTTPGetAction {
                path: Some(readiness.health_path.clone()),
                port: IntOrString::String("http".into()),
                scheme: Some(if readiness.https { "HTTPS" } else { "HTTP" }.into()),
                ..HTTPGetAction::default()
            }),
            period_seconds: Some(10),
            failure_threshold: Some(3),
            ..Probe::default()
        }),
        resources: accelerators(server),
        volume_mounts: Some(mounts),
        ..Container::default()
    };
    Ok(PodSpec {
        containers: vec![container],
        volumes: Some(volumes),
        ..PodSpec::default()
    })
}

/// The extended resources of the winner's accelerators, as limits (and equal requests).
fn accelerators(server: &Server<'_>) -> Option<ResourceRequirements> {
    let (kind, devices) = server.accelerators()?;
    let resource = match kind {
        Accelerator::Nvidia => "nvidia.com/gpu",
        Accelerator::Ascend => "huawei.com/Ascend910",
        Accelerator::Amd => "amd.com/gpu",
    };
    let amount: BTreeMap<String, Quantity> =
        [(resource.to_string(), Quantity(devices.len().to_string()))].into();
    Some(ResourceRequirements {
        limits: Some(amount.clone()),
        requests: Some(amount),
        ..ResourceRequirements::default()
    })
}

/// `text` as a container argument: each secret as `$(VAR)`, and a literal `$(` escaped.
fn expanded(text: &str, secrets: &Secrets) -> String {
    secrets
        .split(text)
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(t) => t.replace("$(", "$$("),
            Piece::Secret(s) => format!("$({})", s.variable),
        })
        .collect()
}

/// The variable `key` = `value`: from the Secret when the value is one secret, with `$(VAR)`
/// references where it holds some.
fn env_var(key: &str, value: &str, secrets: &Secrets, name: &str) -> EnvVar {
    match secrets.split(value).as_slice() {
        [Piece::Secret(s)] => secret_var(key, &s.variable, name),
        _ => EnvVar {
            name: key.into(),
            value: Some(expanded(value, secrets)),
            ..EnvVar::default()
        },
    }
}

/// The variable `key` from the key `variable` of the Secret `<name>-secrets`.
fn secret_var(key: &str, variable: &str, name: &str) -> EnvVar {
    EnvVar {
        name: key.into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: format!("{name}-secrets"),
                key: variable.into(),
                optional: None,
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}
