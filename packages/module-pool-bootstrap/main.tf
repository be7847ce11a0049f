# What a pool's instances boot with, for every cloud captf ships a pool
# module for (GCP and Azure include this one module): the user data, and
# whether the pool can deliver the bootstrap data at all. Pure expressions,
# no provider, so tests/ runs anywhere with `tofu test`.
#
# | bootstrap_format | labels to register | user_data                                        |
# |------------------|--------------------|--------------------------------------------------|
# | cloud-config     | none               | bootstrap_data as it is, unless always_boothook  |
# | cloud-config     | some               | base64 of a MIME multipart: boothook, then data  |
# | ignition         | none               | the data; decoded with decode_ignition           |
# | ignition         | some               | refused: Ignition runs no boothook               |
#
# Gzipped Ignition is refused either way. A cloud passes what differs:
# boothook_files (Azure: azure.json for the worker identity), always_boothook
# (Azure: the files must be written on every boot), decode_ignition (GCP:
# Ignition reads GCE user-data as it is, while cloud-config goes with
# user-data-encoding=base64).

terraform {
  required_version = ">= 1.5.0"
}

locals {
  # A gzip stream starts with 1f 8b 08, which base64 writes as "H4sI".
  # Whether the data is compressed is not itself secret.
  gzipped      = nonsensitive(startswith(var.bootstrap_data, "H4sI"))
  cloud_config = var.bootstrap_format == "cloud-config"

  # The kubelet refuses to start with a --node-labels key in the
  # kubernetes.io or k8s.io namespaces unless it is one of its own labels or
  # in a namespace it may set (k8s.io/kubelet IsKubeletLabel; the
  # NodeRestriction admission plugin enforces the same rule), so such keys
  # are dropped, and reported, instead of breaking the node.
  kubelet_own_labels = [
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "kubernetes.io/arch",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
  ]
  kubelet_own_namespaces = ["kubelet.kubernetes.io", "node.kubernetes.io"]
  restricted_namespaces  = ["kubernetes.io", "k8s.io"]

  label_prefixes = { for k in keys(var.node_labels) : k => strcontains(k, "/") ? split("/", k)[0] : "" }
  label_allowed = {
    for k, prefix in local.label_prefixes : k => (
      contains(local.kubelet_own_labels, k) ||
      anytrue([for ns in local.kubelet_own_namespaces : prefix == ns || endswith(prefix, ".${ns}")]) ||
      !anytrue([for ns in local.restricted_namespaces : prefix == ns || endswith(prefix, ".${ns}")])
    )
  }
  registered_labels = { for k, v in var.node_labels : k => v if local.label_allowed[k] }
  dropped_labels    = sort([for k, allowed in local.label_allowed : k if !allowed])
  has_labels        = length(local.registered_labels) > 0

  node_labels_fragment = templatefile("${path.module}/templates/node-labels.sh.tftpl", {
    node_labels = join(",", [for k in sort(keys(local.registered_labels)) : "${k}=${local.registered_labels[k]}"])
  })
  boothook = templatefile("${path.module}/templates/boothook.sh.tftpl", {
    module_name          = var.module_name
    files                = var.boothook_files
    node_labels_fragment = local.node_labels_fragment
  })

  # The bootstrap data is never parsed: it travels as an opaque base64 part.
  # text/plain lets cloud-init detect #cloud-config or "## template: jinja"
  # itself; application/x-gzip makes it decompress the part first.
  multipart = templatefile("${path.module}/templates/multipart.tftpl", {
    boundary             = var.boundary
    boothook             = local.boothook
    payload_content_type = local.gzipped ? "application/x-gzip" : "text/plain; charset=\"utf-8\""
    payload_base64       = join("\n", regexall(".{1,76}", var.bootstrap_data))
  })

  multipart_needed = local.has_labels || var.always_boothook
  decoded          = !local.cloud_config && var.decode_ignition
  # Only the selected branch of a conditional reports errors, so gzipped
  # Ignition, which is refused, never reaches base64decode().
  user_data = (
    local.cloud_config ? (local.multipart_needed ? base64encode(local.multipart) : var.bootstrap_data) :
    !var.decode_ignition ? var.bootstrap_data :
    local.gzipped ? "" : base64decode(var.bootstrap_data)
  )

  # Bytes of the user data. base64 is ASCII, so its length is its size;
  # decoded Ignition may hold multi-byte characters, so its size comes from
  # the base64 it was decoded from.
  decoded_bytes = floor(length(var.bootstrap_data) / 4) * 3 - (
    endswith(var.bootstrap_data, "==") ? 2 : endswith(var.bootstrap_data, "=") ? 1 : 0
  )
  user_data_bytes = nonsensitive(local.decoded ? local.decoded_bytes : length(local.user_data))
}
