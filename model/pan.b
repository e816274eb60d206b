	switch (t->back) {
	default: Uerror("bad return move");
	case  0: goto R999; /* nothing to undo */

		 /* CLAIM liveness */
;
		;
		
	case 4: // STATE 6
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* CLAIM safety */
;
		
	case 5: // STATE 1
		goto R999;

	case 6: // STATE 10
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC :init: */

	case 7: // STATE 1
		;
		;
		delproc(0, now._nr_pr-1);
		;
		goto R999;

	case 8: // STATE 2
		;
		;
		delproc(0, now._nr_pr-1);
		;
		goto R999;

	case 9: // STATE 3
		;
		;
		delproc(0, now._nr_pr-1);
		;
		goto R999;

	case 10: // STATE 4
		;
		;
		delproc(0, now._nr_pr-1);
		;
		goto R999;

	case 11: // STATE 6
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC Env */
	case 12: // STATE 3
		sv_restor();
		goto R999;
	case 13: // STATE 7
		sv_restor();
		goto R999;
	case 14: // STATE 10
		sv_restor();
		goto R999;
	case 15: // STATE 13
		sv_restor();
		goto R999;
	case 16: // STATE 16
		sv_restor();
		goto R999;
	case 17: // STATE 19
		sv_restor();
		goto R999;
	case 18: // STATE 31
		sv_restor();
		goto R999;

	case 19: // STATE 35
		;
		p_restor(II);
		;
		;
		goto R999;

		 /* PROC Legacy */

	case 20: // STATE 1
		;
		now.alive[2] = trpt->bup.oval;
		;
		goto R999;
	case 21: // STATE 7
		sv_restor();
		goto R999;
	case 22: // STATE 21
		sv_restor();
		goto R999;
;
		;
		;
		;
			case 25: // STATE 38
		sv_restor();
		goto R999;
	case 26: // STATE 61
		sv_restor();
		goto R999;
;
		;
			case 28: // STATE 72
		sv_restor();
		goto R999;

	case 29: // STATE 79
		;
	/* 0 */	((P1 *)_this)->lres = trpt->bup.oval;
		;
		;
		goto R999;
	case 30: // STATE 86
		sv_restor();
		goto R999;
;
		;
			case 32: // STATE 97
		sv_restor();
		goto R999;
	case 33: // STATE 111
		sv_restor();
		goto R999;

	case 34: // STATE 112
		;
	/* 0 */	((P1 *)_this)->lres = trpt->bup.oval;
		;
		;
		goto R999;
	case 35: // STATE 126
		sv_restor();
		goto R999;
	case 36: // STATE 132
		sv_restor();
		goto R999;

		 /* PROC Ringback */

	case 37: // STATE 1
		;
		now.alive[ Index(((P0 *)_this)->me, 3) ] = trpt->bup.oval;
		;
		goto R999;
	case 38: // STATE 10
		sv_restor();
		goto R999;
	case 39: // STATE 30
		sv_restor();
		goto R999;
;
		;
			case 41: // STATE 39
		sv_restor();
		goto R999;
	case 42: // STATE 43
		sv_restor();
		goto R999;
;
		;
			case 44: // STATE 66
		sv_restor();
		goto R999;

	case 45: // STATE 72
		;
		((P0 *)_this)->loops = trpt->bup.oval;
		;
		goto R999;

	case 46: // STATE 73
		;
		((P0 *)_this)->sup = trpt->bup.oval;
		;
		goto R999;
	case 47: // STATE 157
		sv_restor();
		goto R999;

	case 48: // STATE 160
		;
		((P0 *)_this)->loops = trpt->bup.ovals[1];
		((P0 *)_this)->sup = trpt->bup.ovals[0];
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;

	case 49: // STATE 161
		;
	/* 0 */	((P0 *)_this)->res = trpt->bup.oval;
		;
		;
		goto R999;
	case 50: // STATE 181
		sv_restor();
		goto R999;

	case 51: // STATE 184
		;
	/* 0 */	((P0 *)_this)->res = trpt->bup.oval;
		;
		;
		goto R999;
	case 52: // STATE 204
		sv_restor();
		goto R999;

	case 53: // STATE 207
		;
	/* 0 */	((P0 *)_this)->res = trpt->bup.oval;
		;
		;
		goto R999;
;
		;
		;
		;
			case 56: // STATE 231
		sv_restor();
		goto R999;
	case 57: // STATE 259
		sv_restor();
		goto R999;
;
		;
			case 59: // STATE 278
		sv_restor();
		goto R999;

	case 60: // STATE 285
		;
	/* 0 */	((P0 *)_this)->ans = trpt->bup.oval;
		;
		;
		goto R999;
	case 61: // STATE 296
		sv_restor();
		goto R999;

	case 62: // STATE 298
		;
		now.sending[ Index(((P0 *)_this)->me, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
			case 64: // STATE 317
		sv_restor();
		goto R999;
	case 65: // STATE 343
		sv_restor();
		goto R999;

	case 66: // STATE 346
		;
	/* 0 */	((P0 *)_this)->ans = trpt->bup.oval;
		;
		;
		goto R999;
	case 67: // STATE 360
		sv_restor();
		goto R999;

	case 68: // STATE 362
		;
		now.sending[ Index(((P0 *)_this)->me, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
			case 70: // STATE 381
		sv_restor();
		goto R999;
	case 71: // STATE 389
		sv_restor();
		goto R999;
	case 72: // STATE 409
		sv_restor();
		goto R999;

	case 73: // STATE 412
		;
	/* 0 */	((P0 *)_this)->ans = trpt->bup.oval;
		;
		;
		goto R999;
	case 74: // STATE 426
		sv_restor();
		goto R999;

	case 75: // STATE 428
		;
		now.sending[ Index(((P0 *)_this)->me, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
			case 77: // STATE 447
		sv_restor();
		goto R999;
	case 78: // STATE 473
		sv_restor();
		goto R999;

	case 79: // STATE 476
		;
	/* 0 */	((P0 *)_this)->ans = trpt->bup.oval;
		;
		;
		goto R999;
	case 80: // STATE 493
		sv_restor();
		goto R999;

	case 81: // STATE 495
		;
		now.sending[ Index(((P0 *)_this)->me, 2) ] = trpt->bup.oval;
		;
		goto R999;
;
		;
			case 83: // STATE 514
		sv_restor();
		goto R999;
	case 84: // STATE 540
		sv_restor();
		goto R999;
;
		;
			case 86: // STATE 563
		sv_restor();
		goto R999;
	case 87: // STATE 581
		sv_restor();
		goto R999;

	case 88: // STATE 582
		;
	/* 0 */	((P0 *)_this)->found = trpt->bup.oval;
		;
		;
		goto R999;
	case 89: // STATE 593
		sv_restor();
		goto R999;
;
		;
			case 91: // STATE 613
		sv_restor();
		goto R999;
	case 92: // STATE 639
		sv_restor();
		goto R999;

	case 93: // STATE 642
		;
	/* 1 */	((P0 *)_this)->res = trpt->bup.ovals[1];
	/* 0 */	((P0 *)_this)->found = trpt->bup.ovals[0];
		;
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;
	case 94: // STATE 662
		sv_restor();
		goto R999;

	case 95: // STATE 665
		;
	/* 1 */	((P0 *)_this)->res = trpt->bup.ovals[1];
	/* 0 */	((P0 *)_this)->found = trpt->bup.ovals[0];
		;
		;
		ungrab_ints(trpt->bup.ovals, 2);
		goto R999;
	case 96: // STATE 679
		sv_restor();
		goto R999;
;
		;
			case 98: // STATE 699
		sv_restor();
		goto R999;

	case 99: // STATE 706
		;
		((P0 *)_this)->sup = trpt->bup.oval;
		;
		goto R999;

	case 100: // STATE 706
		;
		((P0 *)_this)->sup = trpt->bup.oval;
		;
		goto R999;
;
		;
			case 102: // STATE 729
		sv_restor();
		goto R999;
	case 103: // STATE 739
		sv_restor();
		goto R999;

	case 104: // STATE 744
		;
		p_restor(II);
		;
		;
		goto R999;
	}

