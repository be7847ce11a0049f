output "image" {
  description = "The image with its placeholders filled; as written without a version."
  value       = local.image
}

output "has_placeholder" {
  description = "Whether the image holds {version}, {semver}, {slug} or {fullslug}."
  value       = local.has_placeholder
}

output "has_fullslug" {
  description = "Whether the image holds {fullslug}, the only placeholder that keeps a +suffix."
  value       = local.has_fullslug
}

output "version_has_suffix" {
  description = "Whether kubernetes_version carries build metadata such as +rke2r2."
  value       = local.has_suffix
}

output "placeholder_missing" {
  description = "A version is set but the image does not name it, so a version change would not roll the pool."
  value       = local.has_version && !local.has_placeholder
}

output "fullslug_missing" {
  description = "The version has a +suffix but the image lacks {fullslug}, so a suffix-only upgrade would not roll the pool."
  value       = local.has_suffix && !local.has_fullslug
}

output "version_missing" {
  description = "The image holds a placeholder but there is no version to fill it."
  value       = local.has_placeholder && !local.has_version
}
