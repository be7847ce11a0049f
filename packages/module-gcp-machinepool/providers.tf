# The Google provider in the cluster's project and region, taken from the
# cluster's exports. Credentials come only from the identity Secret
# (GOOGLE_CREDENTIALS or GOOGLE_APPLICATION_CREDENTIALS); without exports the
# provider falls back to GOOGLE_PROJECT and GOOGLE_REGION, and the group's
# precondition explains what is missing.
provider "google" {
  # Labels are exactly the ones this module sets (labels.tf): no
  # goog-terraform-provisioned label.
  add_terraform_attribution_label = false
  project                         = local.project
  region                          = local.region
}
