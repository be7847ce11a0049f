// JSON merge patches as the API server applies them, for fakes and checks of the patches captf sends: the contract's one routine.
export { applyMergePatch } from "@captf/contract";
