// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// The flame graph's behaviour, embedded by write_svg.c after its data:
// D (sizes, unit, totals), S (texts) and N (boxes depth first: depth, x,
// width, kind, text, fill, and in a differential graph the baseline
// weight).
// Frame texts only ever reach the page as text nodes and attribute
// values, never as markup.  Nothing is fetched.
(function () {
	"use strict";
	var NS = "http://www.w3.org/2000/svg";
	var stride = D.diff ? 7 : 6, n = N.length / stride;
	var span = D.width - 2 * D.pad, CW = 7.2;	/* 12px monospace */
	var depth = [], x = [], w = [], kind = [], text = [], bw = [];
	var end = [], fill = [], g = [], rect = [], label = [];
	var zoomed = 0, i;

	for (i = 0; i < n; i++) {
		depth[i] = N[i * stride];
		x[i] = N[i * stride + 1];
		w[i] = N[i * stride + 2];
		kind[i] = N[i * stride + 3];
		text[i] = S[N[i * stride + 4]];
		fill[i] = "#" + ("00000" + N[i * stride + 5].toString(16)).slice(-6);
		bw[i] = D.diff ? N[i * stride + 6] : 0;
	}
	/* a box's subtree is the boxes after it, up to one no deeper */
	(function () {
		var open = [];
		for (var i = 0; i < n; i++) {
			while (open.length && depth[open[open.length - 1]] >= depth[i])
				end[open.pop()] = i;
			open.push(i);
		}
		while (open.length)
			end[open.pop()] = n;
	})();

	function pct(v, total) {
		return total ? 100 * v / total : 0;
	}

	function change(i) {
		return pct(w[i], D.total) - pct(bw[i], D.btotal);
	}

	function amount(v) {
		if (D.unit === "ns") {
			if (v >= 1e9)
				return (v / 1e9).toFixed(2) + " s";
			return (v / 1e6).toFixed(v >= 1e7 ? 1 : 2) + " ms";
		}
		return v.toLocaleString("en-US") + (v === 1 ? " sample" : " samples");
	}

	function describe(i) {
		var lines = [text[i]];
		if (D.diff) {
			var b = pct(bw[i], D.btotal), a = pct(w[i], D.total), d = a - b;
			lines.push("before " + b.toFixed(2) + "% \u2192 after " +
				   a.toFixed(2) + "% (" + (d >= 0 ? "+" : "\u2212") +
				   Math.abs(d).toFixed(2) + " points)");
			lines.push(amount(w[i]) + " after, " + amount(bw[i]) + " before");
		} else {
			lines.push(amount(w[i]) + ", " + pct(w[i], D.total).toFixed(2) +
				   "% of all");
		}
		return lines;
	}

	var frames = document.getElementById("frames");
	var maxdepth = D.maxdepth;

	function y(i) {
		return D.top + (maxdepth - depth[i]) * D.frame;
	}

	for (i = 0; i < n; i++) {
		g[i] = document.createElementNS(NS, "g");
		g[i].setAttribute("class", "f");
		g[i].setAttribute("data-i", String(i));
		g[i].setAttribute("aria-label", text[i]);
		rect[i] = document.createElementNS(NS, "rect");
		rect[i].setAttribute("y", String(y(i)));
		rect[i].setAttribute("height", String(D.frame - 1));
		rect[i].setAttribute("rx", "2");
		rect[i].setAttribute("fill", fill[i]);
		label[i] = document.createElementNS(NS, "text");
		label[i].setAttribute("y", String(y(i) + D.frame - 4));
		g[i].appendChild(rect[i]);
		g[i].appendChild(label[i]);
		frames.appendChild(g[i]);
	}

	function fit(s, px) {
		var m = Math.floor((px - 6) / CW);
		if (m < 3)
			return "";
		return s.length <= m ? s : s.slice(0, m - 2) + "..";
	}

	/* The zoomed box's subtree spans the width; its ancestors stay,
	 * full width and faded; everything else is hidden. */
	function layout() {
		var zx = x[zoomed], scale = span / w[zoomed];
		for (var i = 0; i < n; i++) {
			var inside = i >= zoomed && i < end[zoomed];
			var anc = i < zoomed && end[i] > zoomed;
			if (!inside && !anc) {
				g[i].style.display = "none";
				continue;
			}
			var px = inside ? D.pad + (x[i] - zx) * scale : D.pad;
			var pw = inside ? w[i] * scale : span;
			g[i].style.display = "";
			g[i].setAttribute("class", anc ? "f anc" : "f");
			if (matched[i])
				g[i].classList.add("match");
			rect[i].setAttribute("x", px.toFixed(2));
			rect[i].setAttribute("width", Math.max(pw - 0.5, 0.1).toFixed(2));
			label[i].setAttribute("x", (px + 3).toFixed(2));
			label[i].textContent = fit(text[i], pw);
		}
		document.getElementById("reset").setAttribute("class",
			zoomed ? "button" : "button off");
	}

	function zoom(i) {
		zoomed = i;
		layout();
	}

	/* Search: a box matches when its text does; the share counts each
	 * match once, not again under a matching ancestor. */
	var matched = [];

	function search(source) {
		var re, sum = 0, until = -1, count = 0;
		var out = document.getElementById("matched");
		try {
			re = new RegExp(source);
		} catch (e) {
			out.textContent = "bad regex";
			return null;
		}
		for (var i = 0; i < n; i++) {
			matched[i] = source !== "" && re.test(text[i]);
			if (!matched[i])
				continue;
			count++;
			if (i >= until) {
				sum += w[i];
				until = end[i];
			}
		}
		layout();
		out.textContent = count ? "Matched: " + pct(sum, D.total).toFixed(2) +
			"% (" + count + " frames)" : "Matched: none";
		document.getElementById("clear").setAttribute("class", "button");
		return pct(sum, D.total);
	}

	function clear() {
		matched = [];
		document.getElementById("q").value = "";
		document.getElementById("matched").textContent = " ";
		document.getElementById("clear").setAttribute("class", "button off");
		layout();
	}

	/* the tooltip, kept inside the picture */
	var tip = document.getElementById("tip");
	var tipRect = tip.firstElementChild, tipText = tip.lastElementChild;
	var svg = document.documentElement;

	function showTip(i, evt) {
		var lines = describe(i), j, t, pt = svg.createSVGPoint();
		while (tipText.firstChild)
			tipText.removeChild(tipText.firstChild);
		for (j = 0; j < lines.length; j++) {
			t = document.createElementNS(NS, "tspan");
			t.setAttribute("x", "0");
			t.setAttribute("dy", j ? "15" : "0");
			t.textContent = lines[j];
			tipText.appendChild(t);
		}
		tip.setAttribute("visibility", "visible");
		var box = tipText.getBBox();
		pt.x = evt.clientX;
		pt.y = evt.clientY;
		pt = pt.matrixTransform(svg.getScreenCTM().inverse());
		var tx = pt.x + 14, ty = pt.y + 22;
		if (tx + box.width + 8 > D.width)
			tx = Math.max(2, pt.x - box.width - 14);
		if (ty + box.height > svg.viewBox.baseVal.height)
			ty = pt.y - box.height - 4;
		tipRect.setAttribute("x", String(box.x - 4));
		tipRect.setAttribute("y", String(box.y - 3));
		tipRect.setAttribute("width", String(box.width + 8));
		tipRect.setAttribute("height", String(box.height + 6));
		tip.setAttribute("transform", "translate(" + tx.toFixed(1) + "," +
				 ty.toFixed(1) + ")");
		document.getElementById("details").textContent = lines.join("; ");
	}

	function boxOf(evt) {
		var el = evt.target.closest ? evt.target.closest("g.f") : null;
		return el ? Number(el.getAttribute("data-i")) : -1;
	}

	frames.addEventListener("mousemove", function (evt) {
		var i = boxOf(evt);
		if (i >= 0)
			showTip(i, evt);
	});
	frames.addEventListener("mouseleave", function () {
		tip.setAttribute("visibility", "hidden");
		document.getElementById("details").textContent = " ";
	});
	frames.addEventListener("click", function (evt) {
		var i = boxOf(evt);
		if (i >= 0)
			zoom(i);
	});
	document.getElementById("reset").addEventListener("click", function () {
		zoom(0);
	});
	document.getElementById("search").addEventListener("click", function () {
		search(document.getElementById("q").value);
	});
	document.getElementById("clear").addEventListener("click", clear);
	document.getElementById("q").addEventListener("keydown", function (evt) {
		if (evt.key === "Enter")
			search(this.value);
		else if (evt.key === "Escape")
			clear();
	});
	document.addEventListener("keydown", function (evt) {
		if ((evt.ctrlKey || evt.metaKey) && evt.key === "f") {
			evt.preventDefault();
			document.getElementById("q").focus();
		}
	});
	layout();
})();
