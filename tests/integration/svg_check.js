// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Drive a pysight flame graph in headless Chromium as a user would, and
// print what was seen as JSON on stdout.
//
// usage: node svg_check.js CONFIG_JSON
//   {"svg": path, "hover": label prefix, "searches": [regex, ...],
//    "screenshot": optional png path, "node_modules": dir of playwright-core}
//
// Every request the page makes that is not for a file: URL is aborted and
// reported, so the test can assert the SVG fetches nothing.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");

const cfg = JSON.parse(process.argv[2]);
const { chromium } = require(path.join(cfg.node_modules, "playwright-core"));

const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
	"--no-first-run", "--disable-background-networking",
	"--disable-component-update", "--disable-sync"];

// Every box as drawn: label, depth, geometry, visibility, highlight.
function boxes(page) {
	return page.evaluate(() => Array.from(document.querySelectorAll("#frames g.f"))
		.map((g) => {
			const r = g.querySelector("rect");
			return {
				i: Number(g.getAttribute("data-i")),
				label: g.getAttribute("aria-label"),
				visible: g.style.display !== "none",
				x: Number(r.getAttribute("x")),
				y: Number(r.getAttribute("y")),
				width: Number(r.getAttribute("width")),
				fill: r.getAttribute("fill"),
				match: g.classList.contains("match"),
				shown: g.querySelector("text").textContent,
			};
		}));
}

// The whole picture: the viewport made its size, since a full-page
// screenshot of an SVG document never completes in headless Chromium.
async function shoot(page, file) {
	const size = await page.evaluate(() => {
		const v = document.documentElement.viewBox.baseVal;
		return { width: Math.ceil(v.width), height: Math.ceil(v.height) };
	});
	const old = page.viewportSize();
	await page.setViewportSize(size);
	await page.screenshot({ path: file, timeout: 15000 });
	await page.setViewportSize(old);
}

function rectOf(page, i) {
	return page.locator(`#frames g.f[data-i="${i}"] rect`);
}

async function main() {
	const out = { requests: [], errors: [] };
	const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), "pysight-tests-chromium-"));
	let context;

	try {
		context = await chromium.launchPersistentContext(profileDir, {
			executablePath: "/usr/bin/chromium",
			headless: true,
			args: ARGS,
			viewport: { width: 1280, height: 900 },
		});
		await context.route("**", (route) => {
			const url = route.request().url();
			if (url.startsWith("file:"))
				return route.continue();
			out.requests.push(url);
			return route.abort();
		});
		const page = context.pages()[0] || await context.newPage();
		page.on("pageerror", (e) => out.errors.push(String(e)));
		page.on("console", (m) => {
			if (m.type() === "error")
				out.errors.push(m.text());
		});
		await page.goto("file://" + path.resolve(cfg.svg));
		await page.waitForSelector("#frames g.f");

		out.title = await page.textContent("#title");
		out.subtitle = await page.textContent("#subtitle");
		out.before = await boxes(page);
		out.span = Math.max(...out.before.map((b) => b.width));

		// hover the widest box whose label starts with cfg.hover
		const hits = out.before.filter((b) => b.label.startsWith(cfg.hover));
		if (!hits.length)
			throw new Error("no box labelled " + cfg.hover);
		const target = hits.reduce((a, b) => (b.width > a.width ? b : a));
		out.target = target;
		await rectOf(page, target.i).hover();
		out.tip = {
			visible: await page.getAttribute("#tip", "visibility"),
			lines: await page.$$eval("#tip tspan", (t) => t.map((s) => s.textContent)),
		};
		out.details = await page.textContent("#details");
		if (cfg.screenshot)
			await shoot(page, cfg.screenshot);

		// click: zoom into it
		await rectOf(page, target.i).click();
		out.zoomed = await boxes(page);
		out.reset_enabled = await page.getAttribute("#reset", "class");

		// reset
		await page.click("#reset");
		out.reset = await boxes(page);

		// search by typing each regex and pressing the button
		out.searches = [];
		for (const re of cfg.searches) {
			await page.fill("#q", re);
			await page.click("#search");
			const seen = await boxes(page);
			out.searches.push({
				regex: re,
				matched: await page.textContent("#matched"),
				labels: seen.filter((b) => b.match).map((b) => b.label),
				unmatched: seen.filter((b) => !b.match).map((b) => b.label),
			});
		}
		await page.click("#clear");
		out.cleared = await boxes(page);
	} catch (e) {
		out.errors.push("driver: " + (e.stack || e));
	} finally {
		if (context)
			await context.close();
		fs.rmSync(profileDir, { recursive: true, force: true });
	}
	process.stdout.write(JSON.stringify(out));
}

main();
