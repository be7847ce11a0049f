/**
 * Validating webhook of TerraformNotificationReceiver (CREATE, UPDATE): a namespace selector the manager could not read, or an
 * inline URL that is no URL, is refused when written, not found out at the first event. The URL is never quoted back.
 */
import type { TerraformNotificationReceiver } from "../api/terraformnotificationreceiver.js";
import { labelSelectorProblems } from "./kubernetes-names.js";
import { verdict, type Verdict } from "./verdict.js";

export function validateTerraformNotificationReceiver(
  _oldObject: TerraformNotificationReceiver | undefined,
  newObject: TerraformNotificationReceiver,
): Verdict {
  const { namespaceSelector, url } = newObject.spec;
  const problems = namespaceSelector ? labelSelectorProblems("spec.namespaceSelector", namespaceSelector) : [];
  if (url !== undefined && !URL.canParse(url)) problems.push("spec.url: not a valid URL");
  const warnings =
    url !== undefined && /[?&](token|key|sig|signature)=|hooks\.slack\.com/i.test(url)
      ? ["spec.url looks like it carries a token: anyone who may read this receiver sees it; use urlSecretRef"]
      : [];
  return verdict(problems, warnings);
}
