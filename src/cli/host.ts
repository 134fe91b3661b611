/**
 * What a command module is given to register itself (commands/<verb>.ts), apart from the program that lists them
 * (program.ts): so that a command imports this, not the module that imports every command.
 */
import type { Command } from "commander";
import type { Context } from "../context/context.ts";

/** Makes the context a command acts in; `verb` names its log file. */
export type ContextFactory = (command: Command, verb: string) => Context;

/**
 * An action's outcome: an exit code for a command that finished but must report failure (some runs failed, a
 * node does not answer); nothing for success. Commands that cannot finish throw a RinglabError instead.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: an action that returns nothing succeeded
export type ActionResult = number | void;

export interface CommandHost {
  readonly contextFor: ContextFactory;
  /** Wraps an action so that the exit code it returns becomes ringlab's. */
  action<Args extends unknown[]>(
    handler: (...args: Args) => ActionResult | Promise<ActionResult>,
  ): (...args: Args) => Promise<void>;
}

export type RegisterCommand = (program: Command, host: CommandHost) => void;
