// Vitest setup: unmount components after each test (testing-library registers its own cleanup).
import { afterEach } from "vitest";
import { cleanup } from "@testing-library/svelte";

afterEach(() => cleanup());
