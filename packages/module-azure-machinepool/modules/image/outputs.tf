output "image_id" {
  description = "The image ID with {version} and {semver} filled; as written without a version."
  value       = local.image_id
}

output "has_placeholder" {
  description = "Whether image_id holds {version} or {semver}."
  value       = local.has_placeholder
}

output "version_missing" {
  description = "image_id holds a placeholder but there is no version to fill it."
  value       = local.has_placeholder && !local.has_version
}
