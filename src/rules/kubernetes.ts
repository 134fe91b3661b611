/**
 * Kubernetes names as the API server accepts them (k8s.io/apimachinery/pkg/util/validation), checked before any
 * object is written, so that a campaign file's value cannot become another namespace, a label selector with more
 * terms, or a field the manifests did not mean. Pure.
 */

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** A namespace or a Service's name: an RFC 1123 label (IsDNS1123Label). */
export function checkDnsLabel(value: string): string | undefined {
  if (value.length > 63 || !DNS_LABEL.test(value)) {
    return "expected a DNS label: at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit";
  }
  return undefined;
}

/** A PersistentVolumeClaim's or a Job's name: an RFC 1123 subdomain (IsDNS1123Subdomain). */
export function checkDnsSubdomain(value: string): string | undefined {
  if (value.length > 253 || !DNS_SUBDOMAIN.test(value)) {
    return "expected a DNS subdomain: at most 253 lower-case letters, digits, '-' and '.', each part starting and ending with a letter or digit";
  }
  return undefined;
}

/** A label's key: an optional DNS subdomain prefix and '/', then a name of at most 63 characters (IsQualifiedName). */
export function checkLabelKey(key: string): string | undefined {
  const slash = key.lastIndexOf("/");
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (prefix !== undefined && checkDnsSubdomain(prefix) !== undefined)
    return `expected a label key's prefix to be a DNS subdomain, found ${JSON.stringify(prefix)}`;
  if (name.length > 63 || !LABEL_NAME.test(name)) {
    return "expected a label key: [prefix/]name, the name at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit";
  }
  return undefined;
}

/**
 * A label's value: empty, or at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit.
 */
export function checkLabelValue(value: string): string | undefined {
  if (value === "") return undefined;
  if (value.length > 63 || !LABEL_NAME.test(value)) {
    return "expected a label value: at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit";
  }
  return undefined;
}

/**
 * A kubeconfig context's name, as kubeconfigs name them: EKS's ARN (arn:aws:eks:us-east-1:1:cluster/x), GKE's
 * gke_project_zone_name, kind-kind, user@cluster. It is printed into the kubectl lines of the manifests' header, so
 * nothing a shell would read: letters, digits and @ : / . _ - only.
 */
export function checkKubeContext(value: string): string | undefined {
  if (value.length === 0 || value.length > 253 || !/^[A-Za-z0-9@:/._-]+$/.test(value) || value.startsWith("-")) {
    return "expected a kubeconfig context name of 1 to 253 letters, digits and @ : / . _ - (not starting with -)";
  }
  return undefined;
}
