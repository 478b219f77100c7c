// What the Streamable HTTP transport is started with: where it listens, its limits, its security.
import type http from 'node:http';
import type { Principal } from '../auth/index.js';
import type { Dispatcher, InboundMessage } from '../protocol/index.js';

interface HttpTransportBase {
  readonly host: string;
  readonly port: number;
  readonly path: string;
  readonly dispatcher: Dispatcher;
  readonly maxBodyBytes: number;
  /**
   * After a 413, how long and how many more bytes of the refused body are read and discarded
   * before the connection is closed (defaults: 5 s, 64 MiB).
   */
  readonly drain?: { readonly ms: number; readonly bytes: number };
  /** Host header names (without port) accepted; `*` accepts any. */
  readonly allowedHosts: readonly string[];
  /** Origins (scheme://host[:port]) accepted when a request carries Origin; loopback origins always are. */
  readonly allowedOrigins: readonly string[];
  /** Readiness for /readyz: ok, plus details (the live-update listener's health). */
  readonly ready?: () => { ok: boolean; detail: Record<string, unknown> };
  /** How often an open SSE stream gets a keep-alive comment. */
  readonly keepAliveMs?: number;
  readonly log: (line: string) => void;
  /** Issue 14: another era's requests beside 2026-07-28 on the same endpoint (2025-11-25 sessions). */
  readonly otherEra?: HttpEraRoute;
}

/** One HTTP request being answered: who sent it, and its two ends. */
export interface HttpExchange {
  readonly principal: Principal;
  readonly request: http.IncomingMessage;
  readonly response: http.ServerResponse;
}

/**
 * Another protocol era served on the same endpoint: the requests it claims, and GET and DELETE,
 * which the 2026-07-28 era does not use. The router knows no method of it.
 */
export interface HttpEraRoute {
  /** Whether a parsed POST belongs to this era. */
  claims(message: InboundMessage, request: http.IncomingMessage): boolean;
  post(message: InboundMessage, exchange: HttpExchange): Promise<void>;
  /** A JSON-RPC response POSTed by the client (with a session id). */
  postResponse(value: unknown, exchange: HttpExchange): Promise<void>;
  /** GET or DELETE on the endpoint. */
  other(exchange: HttpExchange): Promise<void>;
  close(): void;
}

/** How requests are authenticated, and the metadata a 401 points at. */
export interface HttpSecurity {
  /**
   * Who the request runs as, from its headers (Authorization). Throws ProtocolError
   * AUTHENTICATION_REQUIRED (answered 401 with a WWW-Authenticate challenge) or ROLE_FORBIDDEN (403).
   */
  readonly authenticate: (
    request: http.IncomingMessage,
  ) => Principal | Promise<Principal>;
  /** RFC 9728 protected-resource metadata, served at /.well-known/oauth-protected-resource[/mcp]. */
  readonly protectedResource?:
    | {
        readonly metadataUrl: string;
        readonly document: Record<string, unknown>;
      }
    | undefined;
}

/**
 * Security is given as is, or (when it names the server's own URL, as a token audience does) as a
 * function of the bound endpoint URL: with port 0 the port is known only once bound. It is called
 * once, when listening starts, before any request is served.
 */
export type HttpTransportOptions = HttpTransportBase &
  (HttpSecurity | { readonly securityFor: (url: string) => HttpSecurity });

/** The options requests are served with, security resolved. */
export type ServingOptions = HttpTransportBase & HttpSecurity;

export interface HttpTransport {
  readonly url: string;
  readonly server: http.Server;
  close(): Promise<void>;
  /** Issue 35 (drain): stop accepting connections; requests on open ones are still answered. */
  stopAccepting(): void;
  /** Resolves once no POST is being answered (true), or after `graceMs` (false). */
  settle(graceMs: number): Promise<boolean>;
}
