# captf_tags as GCP labels. Label keys match [a-z][a-z0-9_-]{0,62} and values
# [a-z0-9_-]{0,63}, so captf.io/cluster becomes captf-io_cluster: lowercase,
# "." to "-", anything else invalid to "_". Values are lowercased with
# invalid characters as "_"; one over 63 characters keeps 54, then "-" and 8
# hex characters of the original's hash. additional_tags cannot override a
# captf key: they merge first.
locals {
  captf_label_values = { for k, v in var.captf_tags : k => replace(lower(v), "/[^a-z0-9_-]/", "_") }
  captf_labels = {
    for k, v in local.captf_label_values :
    replace(replace(lower(k), ".", "-"), "/[^a-z0-9_-]/", "_") => length(v) <= 63 ? v : "${substr(v, 0, 54)}-${substr(sha256(var.captf_tags[k]), 0, 8)}"
  }
  labels = merge(var.additional_tags, local.captf_labels)
}
