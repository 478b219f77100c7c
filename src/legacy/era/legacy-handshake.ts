// initialize's handshake (legacy digest §3.2): the version a session speaks, its client, and the
// client capabilities it keeps.
import { ProtocolError } from '../../errors.js';
import {
  LEGACY_VERSIONS,
  type LegacyHandshake,
} from '../session/legacy-session.js';

/** initialize params → the handshake (legacy digest §3.2): our version if we speak theirs, else our latest. */
export function negotiate(
  params: Record<string, unknown> | undefined,
): LegacyHandshake {
  const requested = params?.['protocolVersion'];
  const capabilities = params?.['capabilities'];
  const clientInfo = params?.['clientInfo'] as Record<string, unknown> | null;
  if (
    typeof requested !== 'string' ||
    typeof capabilities !== 'object' ||
    capabilities === null ||
    typeof clientInfo !== 'object' ||
    clientInfo === null ||
    typeof clientInfo['name'] !== 'string' ||
    typeof clientInfo['version'] !== 'string'
  )
    throw new ProtocolError(
      'INVALID_PARAMS',
      'Invalid params: initialize needs protocolVersion, capabilities and clientInfo {name, version}.',
      { data: { supported: [...LEGACY_VERSIONS], requested } },
    );
  return {
    protocolVersion: LEGACY_VERSIONS.includes(requested)
      ? requested
      : (LEGACY_VERSIONS[0] as string),
    clientInfo: {
      name: clientInfo['name'].slice(0, 200),
      version: clientInfo['version'].slice(0, 200),
    },
    capabilities: keptCapabilities(capabilities as Record<string, unknown>),
  };
}

/**
 * The client capabilities a session keeps: only those pgmcp reads (elicitation and its modes,
 * sampling, roots), each reduced to what it reads, so an initialize cannot make the server (and
 * pgmcp.legacy_sessions) hold a capabilities object of any size (issue 32 point 10). An
 * elicitation that names only modes pgmcp does not know keeps one such name, so it still does
 * not count as form.
 */
function keptCapabilities(
  declared: Record<string, unknown>,
): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const name of ['elicitation', 'sampling', 'roots']) {
    const value = declared[name];
    if (typeof value !== 'object' || value === null) continue;
    const given = Object.keys(value);
    const modes: Record<string, object> = {};
    if (name === 'elicitation') {
      for (const mode of given)
        if (mode === 'form' || mode === 'url') modes[mode] = {};
      if (given.length > 0 && Object.keys(modes).length === 0)
        modes['other'] = {};
    }
    kept[name] = modes;
  }
  return kept;
}
