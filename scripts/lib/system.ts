// Debian packages the real-VS Code tests need; installed when missing and we may (root + apt-get).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

interface Need {
  /** Debian package name. */
  pkg: string;
  /** How to tell it is present. */
  present: () => boolean;
  why: string;
}

const onPath = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

export const needs: Record<string, Need> = {
  chromium: { pkg: 'chromium', present: () => existsSync('/usr/bin/chromium'), why: 'headless browser that drives the VS Code workbench' },
  ripgrep: { pkg: 'ripgrep', present: () => onPath('rg'), why: "VS Code's search binary (its own download cannot work offline)" },
  krb5: { pkg: 'libkrb5-dev', present: () => existsSync('/usr/include/krb5.h') || existsSync('/usr/include/krb5/krb5.h'), why: "kerberos headers for code-server's native modules" },
  bubblewrap: { pkg: 'bubblewrap', present: () => onPath('bwrap'), why: "the task runner's sandbox backend" },
  podman: { pkg: 'podman', present: () => onPath('podman'), why: "the task runner's container backend" },
  // crun, podman's usual runtime, cannot set rlimits on hosts with hybrid cgroups; runc can.
  runc: { pkg: 'runc', present: () => onPath('runc'), why: 'the OCI runtime podman uses for the container backend' },
  // podman's --init (containers removed at once, zombies reaped) runs it; podman only recommends it.
  catatonit: { pkg: 'catatonit', present: () => existsSync('/usr/libexec/podman/catatonit') || onPath('catatonit'), why: "the init process of the container backend's containers" },
  mmdebstrap: { pkg: 'mmdebstrap', present: () => onPath('mmdebstrap'), why: 'builds the base image (belay image build-base) from Debian packages' },
  // The remote-engine tests' hosts (test/support/hosts/): each a network namespace with its own
  // SSH server and a user of its own running rootless podman.
  sshd: { pkg: 'openssh-server', present: () => existsSync('/usr/sbin/sshd'), why: "the SSH server of each of the remote-engine tests' hosts" },
  ssh: { pkg: 'openssh-client', present: () => onPath('ssh'), why: 'the SSH client the engines reach remote hosts with' },
  uidmap: { pkg: 'uidmap', present: () => existsSync('/usr/bin/newuidmap'), why: "rootless podman for the test hosts' users" },
  iproute2: { pkg: 'iproute2', present: () => onPath('ip'), why: "the test hosts' network namespaces and links" },
};

/** What the remote-engine tests need besides the container backend's. */
export const REMOTE_PACKAGES: (keyof typeof needs)[] = ['sshd', 'ssh', 'uidmap', 'iproute2'];

/** What the container backend's tests need: an engine with runc, and mmdebstrap for the base image. */
export const CONTAINER_PACKAGES: (keyof typeof needs)[] = ['podman', 'runc', 'catatonit', 'mmdebstrap'];

/** Installs the missing packages with apt-get when running as root; otherwise says what to run. */
export function ensureSystemPackages(names: (keyof typeof needs)[]): void {
  const missing = names.map((n) => needs[n]!).filter((n) => !n.present());
  if (missing.length === 0) return;
  const pkgs = missing.map((m) => m.pkg);
  const list = missing.map((m) => `  ${m.pkg}: ${m.why}`).join('\n');
  const isRoot = process.getuid?.() === 0;
  if (!isRoot || !onPath('apt-get')) {
    throw new Error(`Missing system packages:\n${list}\nInstall them with: sudo apt-get update && sudo apt-get install -y ${pkgs.join(' ')}`);
  }
  console.log(`Installing missing Debian packages: ${pkgs.join(', ')}`);
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...pkgs], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}
