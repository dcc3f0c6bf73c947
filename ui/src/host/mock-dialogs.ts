// The mock host's dialogs that the replayed servers do not drive: "Connect a client"
// (mock-clients.ts), "Serve over HTTP" (mock-serve.ts) and the Profiles view (mock-profiles.ts,
// replayed from the shell's recording). MockHost (mock.ts) extends this; each command is logged
// in `calls`, as every mock command is.

import { MockClients } from "./mock-clients";
import { MockProfiles } from "./mock-profiles";
import { MockServe } from "./mock-serve";
import type {
  ClientView,
  ConnectPreview,
  Connected,
  EndpointView,
  NewToken,
  ProfilesView,
  Restored,
  TokenClient,
} from "./types";

/** A recorded command, for tests: `{command: "reconnect", server: "sqlite"}`. */
export interface MockCall {
  command: string;
  server?: string;
  tool?: string;
}

export class MockDialogs {
  /** Every command received, in order. */
  readonly calls: MockCall[] = [];
  private readonly clients = new MockClients();
  private readonly serve = new MockServe();
  private readonly profiles = new MockProfiles();

  async clientsList(): Promise<ClientView[]> {
    this.calls.push({ command: "clients_list" });
    return this.clients.list();
  }

  async clientsPreview(client: string, servers: string[]): Promise<ConnectPreview> {
    this.calls.push({ command: "clients_preview" });
    return this.clients.preview(client, servers);
  }

  async clientsConnect(client: string, servers: string[]): Promise<Connected> {
    this.calls.push({ command: "clients_connect" });
    return this.clients.connect(client, servers);
  }

  async clientsRestore(client: string, force: boolean): Promise<Restored> {
    this.calls.push({ command: "clients_restore" });
    return this.clients.restore(client, force);
  }

  async gatewayEndpoint(): Promise<EndpointView> {
    this.calls.push({ command: "gateway_endpoint" });
    return this.serve.endpoint();
  }

  async gatewaySet(enabled: boolean, port: number): Promise<EndpointView> {
    this.calls.push({ command: "gateway_set" });
    return this.serve.set(enabled, port);
  }

  async gatewayTokens(): Promise<TokenClient[]> {
    this.calls.push({ command: "gateway_tokens" });
    return this.serve.tokens();
  }

  async gatewayTokenAdd(client: string): Promise<NewToken> {
    this.calls.push({ command: "gateway_token_add" });
    return this.serve.add(client);
  }

  async gatewayTokenRemove(client: string): Promise<boolean> {
    this.calls.push({ command: "gateway_token_remove" });
    return this.serve.remove(client);
  }

  async profilesGet(): Promise<ProfilesView> {
    this.calls.push({ command: "profiles_get" });
    return this.profiles.view();
  }

  async profileToolSet(profile: string, server: string, tool: string, shown: boolean): Promise<ProfilesView> {
    this.calls.push({ command: "profile_tool_set", server, tool });
    return this.profiles.set(profile, server, tool, shown);
  }
}
