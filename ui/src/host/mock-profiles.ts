// What the mock host answers for the Profiles view (the shell's `profiles_get` and
// `profile_tool_set`, crates/desktop/src/state/profiles.rs): replayed from recorded/profiles.json,
// which crates/desktop/src/state/config/profiles_recording.rs records from the shell's own view
// and edit functions over the story's servers and their tools at the page load (`make recording`;
// `make check` fails while it is stale). Nothing here names, counts or filters a tool: a switch
// leads to the state the recording says it leads to, or to the shell's recorded error, and a
// switch the recording does not hold is refused with an error that says where to record it.

import data from "./recorded/profiles.json";
import type { CommandError, ProfileView, ProfilesView } from "./types";

/** One switch as the shell answered it: from the state `from`, to the state `to` or `error`. */
interface Toggle {
  from: number;
  server: string;
  tool: string;
  shown: boolean;
  to: number | null;
  error: CommandError | null;
}

interface Recording {
  unbound: string[];
  tokens_problem: string | null;
  /** Views of one profile each; the first of each profile's is the profile at the load. */
  states: ProfileView[];
  toggles: Toggle[];
}

const REC = data as unknown as Recording;

const profileOf = (state: number) => REC.states[state]!.preview.profile;

/** Each profile at the load, in the view's order: the first state of each. */
function initial(): number[] {
  const seen = new Set<string>();
  return REC.states.flatMap((s, i) => {
    if (seen.has(s.preview.profile)) return [];
    seen.add(s.preview.profile);
    return [i];
  });
}

function unrecorded(detail: object): CommandError {
  console.error("mock host: no recording of this switch:", JSON.stringify(detail));
  return {
    kind: "config",
    message:
      "The mock host has no recording of this switch (it holds one switch flipped at a time, and " +
      "back). Add it to crates/desktop/src/state/config/profiles_recording.rs and run `make recording` " +
      "(the request is in the browser console).",
  };
}

export class MockProfiles {
  /** Each profile's state now. */
  private readonly now = initial();

  view(): ProfilesView {
    return structuredClone({
      profiles: this.now.map((i) => REC.states[i]!),
      unbound: REC.unbound,
      tokens_problem: REC.tokens_problem,
    });
  }

  set(profile: string, server: string, tool: string, shown: boolean): ProfilesView {
    const at = this.now.findIndex((i) => profileOf(i) === profile);
    const from = this.now[at];
    if (from === undefined) throw unrecorded({ profile });
    // Already as asked: the shell writes nothing and answers the view.
    const now = REC.states[from]!.preview.tools.find((t) => t.server === server && t.tool === tool);
    if (now?.shown === shown) return this.view();
    const toggle = REC.toggles.find((t) => t.from === from && t.server === server && t.tool === tool && t.shown === shown);
    if (!toggle) throw unrecorded({ profile, server, tool, shown, from });
    if (toggle.error) throw structuredClone(toggle.error);
    this.now[at] = toggle.to!;
    return this.view();
  }
}
