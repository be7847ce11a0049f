# Tags on every taggable resource. Azure tag names cannot hold / (nor
# < > % & \ ?), so captf.io/cluster becomes captf.io_cluster. A value over
# Azure's 256 characters keeps 247, then - and 8 hex characters of its hash.
# additional_tags cannot override a captf tag: they merge first.
locals {
  captf_azure_tags = {
    for k, v in var.captf_tags : replace(k, "/", "_") => length(v) <= 256 ? v : "${substr(v, 0, 247)}-${substr(sha256(v), 0, 8)}"
  }
  tags = merge(var.additional_tags, local.captf_azure_tags)
}
