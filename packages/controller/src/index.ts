// Public surface of this package: filled in by its first feature.
export {};
